// A Mailgun-shaped multipart delivery to the real gateway process: the attachment's content (a canary)
// reaches no file under the state dir and no log line; what the mapping's text says of it does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { eventually, MAIN, spawnGateway, tempStateDir, writeConfig } from '../helpers/spawn-gateway.ts';
import { filesUnder } from '../helpers/temp-dir.ts';

const CANARY = 'CANARY-9d41b7e2-attachment-bytes';

test('an attachment is described to the mapping, and its content is written nowhere', async () => {
  const stateDir = await tempStateDir();
  const mapping = {
    id: 'mailgun',
    match: { path: 'mailgun' },
    action: 'wake',
    body: 'multipart',
    textTemplate: 'Mail "{{subject}}" with {{attachment-1.filename}} ({{attachment-1.size}} bytes)',
    verify: { scheme: 'basic', username: 'mailgun', secret: 'mailgun-route-secret-0123456789' },
  };
  await writeConfig(stateDir, { hooks: { mappings: [mapping] } });
  const gw = await spawnGateway(stateDir);
  try {
    const form = new FormData();
    form.append('subject', 'Quarterly report');
    form.append('body-plain', 'See attached.');
    form.append('attachment-1', new Blob([`${CANARY}\n`.repeat(2000)], { type: 'text/csv' }), 'report.csv');
    const credential = Buffer.from('mailgun:mailgun-route-secret-0123456789').toString('base64');
    const res = await fetch(`${gw.url}/hooks/mailgun`, {
      method: 'POST',
      headers: { authorization: `Basic ${credential}` },
      body: form,
    });
    assert.equal(res.status, 200, await res.text());
    const size = (CANARY.length + 1) * 2000;
    const entries = await eventually(async () => {
      const page = await gw.admin(`/api/sessions/${MAIN}/history`);
      return page.entries.some((e: { text: string }) => e.text.includes('report.csv')) && page.entries;
    });
    assert.ok(
      entries.some((e: { text: string }) => e.text.includes(`Mail "Quarterly report" with report.csv (${size} bytes)`)),
    );
    // Let the request log line and the session write settle before looking at every file.
    await eventually(async () => gw.output().includes('"hook request"'));
  } finally {
    await gw.stop();
  }
  assert.ok(!gw.output().includes(CANARY), 'no log line has the content');
  const files = await filesUnder(stateDir);
  assert.ok(files.length > 1, files.join(', '));
  for (const file of files) {
    assert.ok(!(await readFile(file)).includes(CANARY), `${file} holds the attachment's content`);
  }
});

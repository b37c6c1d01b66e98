// POST /api/dry-run over loopback HTTP: the plan of `hookgate webhooks test`, its text exactly as the
// command prints it and its --json plan, for a hook of the live config; nothing carried out or stored
// (no event, run, request-log entry or dedupe key), one log line saying a dry run was made; a bad body
// is a 400 naming the field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { post, withGateway, type TestGateway } from '../helpers/recording-host.ts';
import { assertError } from '../helpers/common.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { ROOT, SOURCE_CLI } from '../helpers/spawn-gateway.ts';

async function dryRun(gw: TestGateway, body: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${gw.url}/api/dry-run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

function cli(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [...SOURCE_CLI, ...args], { cwd: ROOT }, (err, stdout, stderr) => {
      if (err && (err as { code?: number }).code !== 1) reject(new Error(stderr || String(err)));
      else resolve(stdout);
    });
  });
}

/** The wrapper's id and the run's id (and its session's) are fresh on every run. */
const sameIds = (text: string): string =>
  text
    .replace(/id=\\?"[^"\\]*\\?"/g, 'id="…"')
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>')
    .trimEnd();

const HOOKS = {
  mappings: [
    {
      id: 'deploys',
      match: { path: 'deploys' },
      action: 'agent',
      name: 'Deploy',
      messageTemplate: 'deploy of {{service}} by {{user}}',
      dedupe: { key: '{{id}}' },
    },
  ],
};

test('the dry run answers what `hookgate webhooks test` prints, and does nothing', async () => {
  await withGateway({ hooks: HOOKS }, async (gw) => {
    const payload = JSON.stringify({ id: 'd-1', service: 'api', user: 'ana' });
    const r = await dryRun(gw, { hook: 'deploys', body: payload, headers: { 'X-Trace': 't1' } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.ok, true);
    assert.match(r.body.text, /^target\s+/);
    assert.match(r.body.text, /deploy of api by ana/);
    assert.match(r.body.text, /effect\s+none \(dry run\)/);
    assert.equal(r.body.plan.effect, 'none (dry run)');
    assert.equal(r.body.plan.runs[0].name, 'Deploy');
    assert.deepEqual(
      r.body.plan.dedupeKeys.map((k: { key: string }) => k.key),
      ['d-1'],
    );

    // The command's own output, from the same config file.
    const dir = await tempDir('dry-run-api-');
    const file = path.join(dir, 'payload.json');
    await writeFile(file, payload);
    const printed = await cli([
      'webhooks',
      'test',
      'deploys',
      '--payload',
      file,
      '--header',
      'x-trace:t1',
      '--config',
      gw.configPath,
      '--state-dir',
      dir,
    ]);
    assert.equal(sameIds(r.body.text), sameIds(printed));
    const printedJson = JSON.parse(
      await cli([
        'webhooks',
        'test',
        'deploys',
        '--payload',
        file,
        '--json',
        '--config',
        gw.configPath,
        '--state-dir',
        dir,
      ]),
    );
    assert.equal(sameIds(JSON.stringify(r.body.plan)), sameIds(JSON.stringify(printedJson)));

    // A refusal is a plan too (200): the command's exit 1 is the text's "refused" line.
    const refused = await dryRun(gw, { hook: 'nope', body: '{}' });
    assert.equal(refused.status, 200);
    assert.match(refused.body.text, /refused\s+404 not_found/);

    // Nothing came of it: no event, run, request-log entry or dedupe key; one log line.
    assert.equal(gw.rec.events.length + gw.rec.turns.length, 0);
    assert.equal(gw.plugin.requests.size, 0);
    assert.equal(gw.rec.logs.filter((l) => l.msg === 'dry run made').length, 2);
    const live = await post(gw.url, '/hooks/deploys', JSON.parse(payload));
    assert.equal(live.status, 202);
    assert.equal(live.body.duplicate, undefined, 'the key was not kept by the dry run');
  });
});

test('a bad dry-run body is a 400 naming the field', async () => {
  await withGateway({}, async (gw) => {
    assertError(await dryRun(gw, { body: '{}' }), 400, 'bad_request', /hook/);
    assertError(await dryRun(gw, { hook: 'wake', body: { text: 'x' } }), 400, 'bad_request', /body/);
    assertError(
      await dryRun(gw, { hook: 'wake', body: '{}', headers: { 'bad name': 'x' } }),
      400,
      'bad_request',
      /headers/,
    );
    assertError(await dryRun(gw, { hook: 'wake', body: '{}', extra: 1 }), 400, 'bad_request', /unknown field "extra"/);
    assertError(await dryRun(gw, ['wake']), 400, 'bad_request', /JSON object/);
    const get = await fetch(`${gw.url}/api/dry-run`);
    assertError({ status: get.status, body: await get.json() }, 405, 'method_not_allowed');
  });
});

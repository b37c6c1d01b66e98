// A Gmail message as the gmail preset takes it: headers, snippet, body part choice, charset, HTML to
// text, and clipping on a character boundary.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clipUtf8 } from '../../gmail/clip-utf8.ts';
import { htmlToText } from '../../gmail/html-to-text.ts';
import { messageToText, skippedLabel } from '../../gmail/message-to-text.ts';

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64url');

test('clipping never splits a character', () => {
  assert.deepEqual(clipUtf8('abc', 10), { text: 'abc', clipped: false });
  assert.deepEqual(clipUtf8('ééé', 5), { text: 'éé', clipped: true });
  assert.deepEqual(clipUtf8('a😀b', 4), { text: 'a', clipped: true });
  assert.deepEqual(clipUtf8('a😀b', 5), { text: 'a😀', clipped: true });
});

test('HTML becomes readable text: scripts, styles and comments gone, entities decoded, blocks on lines', () => {
  const html =
    '<html><head><title>t</title><style>.x{}</style></head><body><script>alert(1)</script>' +
    '<!-- hidden --><h1>Hi</h1><p>one&nbsp;&amp;&#32;two</p><div>three<br>four</div></body></html>';
  assert.equal(htmlToText(html), 'Hi\n\none & two\n\nthree\nfour');
});

test('headers, snippet, a latin-1 plain part, an attached text file ignored, skipped labels', () => {
  const msg = {
    id: 'm1',
    labelIds: ['INBOX'],
    snippet: 'It&#39;s here',
    payload: {
      mimeType: 'multipart/mixed',
      headers: [
        { name: 'FROM', value: 'Zoë <z@example.com>' },
        { name: 'subject', value: 'Café' },
      ],
      parts: [
        { mimeType: 'text/plain', filename: 'notes.txt', body: { data: b64('attachment text') } },
        {
          mimeType: 'text/plain',
          filename: '',
          headers: [{ name: 'Content-Type', value: 'text/plain; charset="ISO-8859-1"' }],
          body: { data: b64(Buffer.from([0x63, 0x61, 0x66, 0xe9])) },
        },
      ],
    },
  };
  assert.deepEqual(messageToText(msg, { includeBody: true, maxBytes: 100 }), {
    id: 'm1',
    from: 'Zoë <z@example.com>',
    subject: 'Café',
    snippet: "It's here",
    body: 'café',
  });
  assert.equal(messageToText(msg, { includeBody: false, maxBytes: 100 }).body, undefined);
  assert.equal(skippedLabel(msg), undefined);
  assert.equal(skippedLabel({ ...msg, labelIds: ['INBOX', 'TRASH'] }), 'TRASH');
  const bare = messageToText({ id: 'm2' }, { includeBody: true, maxBytes: 100 });
  assert.deepEqual(bare, { id: 'm2', from: '(unknown sender)', subject: '(no subject)', snippet: '' });
});

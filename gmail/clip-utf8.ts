// Clips a string to a number of UTF-8 bytes without splitting a character (or a surrogate pair).

export function clipUtf8(text: string, maxBytes: number): { text: string; clipped: boolean } {
  if (text.length <= maxBytes / 3 || Buffer.byteLength(text, 'utf8') <= maxBytes) return { text, clipped: false };
  const bytes = Buffer.from(text, 'utf8');
  let end = maxBytes;
  // Back up over continuation bytes (10xxxxxx) to the start of the character that would be cut.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return { text: bytes.subarray(0, end).toString('utf8'), clipped: true };
}

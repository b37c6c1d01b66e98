// Request headers that carry credentials: no template renders them and no transform sees them.
export const SECRET_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'proxy-authorization',
  'x-service-token',
  'x-openclaw-token',
  'cookie',
]);

// The current time as an ISO string, formatted at most once per millisecond: log lines and history
// records ask for it on every request.
let lastMs = 0;
let lastIso = '';

export function isoNow(): string {
  const ms = Date.now();
  if (ms !== lastMs) {
    lastMs = ms;
    lastIso = new Date(ms).toISOString();
  }
  return lastIso;
}

// Example transform: Prometheus Alertmanager webhook (payload version 4) -> an agent run whose reply
// goes to your chat channel. Whether it is delivered is the mapping's to say (`deliver`, default
// true): the transform never overrides it.
//
// Install: copy this file to <configDir>/hooks/transforms/alertmanager.ts and add the mapping
//   { id: "alertmanager", match: { path: "alertmanager" }, action: "agent", transform: { module: "alertmanager.ts" } }
// and in alertmanager.yml a receiver whose webhook_configs entry posts to /hooks/alertmanager with
// http_config.authorization.credentials set to the hook token (see transforms-example/README.md).
//
// One notification is one alert *group*: `status` is the group's ("firing" while any alert in it
// fires), and `alerts` holds every alert of the group, firing and resolved ones together. Labels and
// annotations are free-form maps: alertname is always there, severity, instance, summary and
// description only by convention, so each falls back to "unknown".

/** What hookgate passes to a transform (headers are lower-cased, credentials removed). */
interface TransformContext {
  payload: Record<string, unknown>;
  headers: Record<string, string>;
  query: Record<string, string>;
  path: string;
}

interface AgentAction {
  action: 'agent';
  name: string;
  message: string;
}

type StringMap = Record<string, unknown>;

interface Alert {
  status?: unknown;
  labels?: StringMap | null;
  annotations?: StringMap | null;
  startsAt?: unknown;
  endsAt?: unknown;
  generatorURL?: unknown;
  fingerprint?: unknown;
}

interface AlertmanagerPayload {
  version?: unknown;
  receiver?: unknown;
  status?: unknown;
  alerts?: unknown;
  groupLabels?: StringMap | null;
  commonLabels?: StringMap | null;
  commonAnnotations?: StringMap | null;
  externalURL?: unknown;
  truncatedAlerts?: unknown;
}

const UNKNOWN = 'unknown';
const MAX_TEXT = 200;
/** Alerts listed one per line; the rest are counted. */
const MAX_LISTED = 20;

/** A string (or finite number) from the payload, on one line and clipped; else the fallback. */
function text(value: unknown, fallback = UNKNOWN, max = MAX_TEXT): string {
  let s: string;
  if (typeof value === 'string') s = value;
  else if (typeof value === 'number' && Number.isFinite(value)) s = String(value);
  else return fallback;
  s = s.replace(/\s+/g, ' ').trim();
  if (s === '') return fallback;
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

function map(value: unknown): StringMap {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as StringMap) : {};
}

/** Alertmanager's own timestamps, minus Go's zero time ("0001-01-01T00:00:00Z" = not set). */
function time(value: unknown): string | undefined {
  const t = text(value, '');
  return t === '' || t.startsWith('0001-01-01') ? undefined : t;
}

function statusOf(alert: Alert): 'firing' | 'resolved' | undefined {
  const s = typeof alert.status === 'string' ? alert.status.toLowerCase() : undefined;
  return s === 'firing' || s === 'resolved' ? s : undefined;
}

function alertLine(alert: Alert): string {
  const labels = map(alert.labels);
  const annotations = map(alert.annotations);
  const status = statusOf(alert);
  const resolved = status === 'resolved';
  const state = status === undefined ? 'UNKNOWN' : status.toUpperCase();
  const about = text(annotations.summary, text(annotations.description));
  const when = resolved ? time(alert.endsAt) : time(alert.startsAt);
  const at = when ? ` (${resolved ? 'ended' : 'since'} ${when})` : '';
  return (
    `- [${state}] ${text(labels.alertname)} severity=${text(labels.severity)} instance=${text(labels.instance)}: ` +
    `${about}${at}`
  );
}

function labelSet(labels: StringMap): string {
  const parts = Object.entries(labels)
    .filter(([, v]) => typeof v === 'string' || typeof v === 'number')
    .map(([k, v]) => `${text(k, '?', 60)}=${text(v, '', 100)}`);
  return parts.length > 0 ? text(parts.join(', '), UNKNOWN, 300) : UNKNOWN;
}

export default function alertmanager(ctx: TransformContext): AgentAction {
  const p: AlertmanagerPayload = map(ctx.payload);
  const alerts: Alert[] = Array.isArray(p.alerts) ? p.alerts.map((a) => map(a) as Alert) : [];
  const firing = alerts.filter((a) => statusOf(a) === 'firing').length;
  const resolved = alerts.filter((a) => statusOf(a) === 'resolved').length;
  const other = alerts.length - firing - resolved;
  const groupStatus = typeof p.status === 'string' ? text(p.status).toUpperCase() : 'UNKNOWN';
  const truncated = typeof p.truncatedAlerts === 'number' && p.truncatedAlerts > 0 ? p.truncatedAlerts : 0;

  const lines = [
    `Alertmanager notification: group ${groupStatus} — ${firing} firing, ${resolved} resolved` +
      (other > 0 ? `, ${other} with an unknown status` : '') +
      (truncated > 0 ? ` (${truncated} more left out by Alertmanager's max_alerts)` : ''),
    `Group: ${labelSet(map(p.groupLabels))} (receiver ${text(p.receiver)})`,
  ];
  const common = map(p.commonAnnotations);
  const commonAbout = text(common.summary, text(common.description, ''));
  if (commonAbout !== '') lines.push(`Summary: ${commonAbout}`);
  lines.push(...alerts.slice(0, MAX_LISTED).map(alertLine));
  if (alerts.length > MAX_LISTED) lines.push(`…and ${alerts.length - MAX_LISTED} more`);
  if (alerts.length === 0) lines.push('(no alerts in the payload)');
  lines.push(`Alertmanager: ${text(p.externalURL, UNKNOWN, 500)}`);

  return { action: 'agent', name: 'Alertmanager', message: lines.join('\n') };
}

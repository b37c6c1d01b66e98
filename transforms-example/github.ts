// Example transform: GitHub repository webhooks -> one short agent message.
//
// Install: copy this file to <configDir>/hooks/transforms/github.ts and add the mapping
//   { id: "github", match: { path: "github" }, action: "agent", transform: { module: "github.ts" },
//     verify: { scheme: "github", secret: "${GITHUB_WEBHOOK_SECRET}" } }
// GitHub signs each delivery with the webhook's secret; verify checks it instead of the hook token.
// Send `application/json`, or keep GitHub's form encoding (its default) and add body: "form" to the
// mapping: it reads the JSON in the form's payload field, so this file sees the same payload either
// way. See transforms-example/README.md.
//
// The event name is not in the body: GitHub sends it in the X-GitHub-Event header. Everything read
// from the payload is optional here, because GitHub omits or nulls fields depending on the event and
// action (a deleted branch has no head_commit, a tag push has no branch, ...), and because whoever
// holds the webhook secret (or the hook token, if the mapping has no verify) can post anything here.

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

// The few payload fields this transform reads. GitHub sends many more; all are treated as optional.
interface GitHubUser {
  login?: unknown;
  name?: unknown;
}
interface GitHubRepository {
  full_name?: unknown;
  html_url?: unknown;
}
interface GitHubCommit {
  id?: unknown;
  message?: unknown;
}
interface PushPayload {
  ref?: unknown;
  created?: unknown;
  deleted?: unknown;
  forced?: unknown;
  compare?: unknown;
  commits?: unknown;
  head_commit?: GitHubCommit | null;
  pusher?: GitHubUser | null;
  sender?: GitHubUser | null;
  repository?: GitHubRepository | null;
}
interface GitHubIssueLike {
  number?: unknown;
  title?: unknown;
  html_url?: unknown;
  merged?: unknown;
  draft?: unknown;
  user?: GitHubUser | null;
}
interface PullRequestPayload {
  action?: unknown;
  number?: unknown;
  pull_request?: GitHubIssueLike | null;
  sender?: GitHubUser | null;
  repository?: GitHubRepository | null;
}
interface IssuesPayload {
  action?: unknown;
  issue?: GitHubIssueLike | null;
  sender?: GitHubUser | null;
  repository?: GitHubRepository | null;
}

const UNKNOWN = 'unknown';
const MAX_TEXT = 200;
/** GitHub lists at most this many commits in a push payload; the real count may be higher. */
const MAX_LISTED_COMMITS = 2048;

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

/** First line of a commit message, clipped. */
function firstLine(value: unknown): string {
  if (typeof value !== 'string') return UNKNOWN;
  return text(value.split(/\r?\n/, 1)[0]);
}

function repoName(repo: GitHubRepository | null | undefined): string {
  return text(repo?.full_name);
}

function agent(message: string): AgentAction {
  return { action: 'agent', name: 'GitHub', message };
}

function describeRef(ref: unknown): string {
  if (typeof ref !== 'string' || ref === '') return `branch ${UNKNOWN}`;
  if (ref.startsWith('refs/heads/')) return `branch ${text(ref.slice('refs/heads/'.length))}`;
  if (ref.startsWith('refs/tags/')) return `tag ${text(ref.slice('refs/tags/'.length))}`;
  return `ref ${text(ref)}`;
}

function push(p: PushPayload): AgentAction {
  const repo = repoName(p.repository);
  const who = text(p.sender?.login, text(p.pusher?.name));
  const ref = describeRef(p.ref);
  const commits = Array.isArray(p.commits) ? p.commits : undefined;
  const count =
    commits === undefined
      ? `${UNKNOWN} commits`
      : commits.length >= MAX_LISTED_COMMITS
        ? `${MAX_LISTED_COMMITS}+ commits`
        : `${commits.length} commit${commits.length === 1 ? '' : 's'}`;
  let what = `${count} to ${ref}`;
  if (p.deleted === true) what = `deleted ${ref}`;
  else if (p.created === true) what = `created ${ref} with ${count}`;
  if (p.forced === true) what += ' (force-push)';
  const lines = [`GitHub push to ${repo} by ${who}: ${what}.`];
  if (p.deleted !== true) {
    const head =
      p.head_commit ?? (commits && commits.length > 0 ? (commits[commits.length - 1] as GitHubCommit | null) : null);
    if (head) lines.push(`Latest commit: ${firstLine(head.message)}`);
  }
  lines.push(`Compare: ${text(p.compare, UNKNOWN, 500)}`);
  return agent(lines.join('\n'));
}

function pullRequest(p: PullRequestPayload): AgentAction {
  const pr = p.pull_request;
  let action = text(p.action);
  if (action === 'closed' && pr?.merged === true) action = 'merged';
  const number = text(p.number, text(pr?.number));
  const author = text(pr?.user?.login);
  const actor = text(p.sender?.login);
  const by = actor !== UNKNOWN && actor !== author ? ` (${action} by ${actor})` : '';
  return agent(
    [
      `GitHub pull request #${number} ${action} in ${repoName(p.repository)}${by}`,
      `Title: ${text(pr?.title)}`,
      `Author: ${author}${pr?.draft === true ? ' (draft)' : ''}`,
      `Link: ${text(pr?.html_url, UNKNOWN, 500)}`,
    ].join('\n'),
  );
}

function issues(p: IssuesPayload): AgentAction {
  const issue = p.issue;
  const action = text(p.action);
  const author = text(issue?.user?.login);
  const actor = text(p.sender?.login);
  const by = actor !== UNKNOWN && actor !== author ? ` (${action} by ${actor})` : '';
  return agent(
    [
      `GitHub issue #${text(issue?.number)} ${action} in ${repoName(p.repository)}${by}`,
      `Title: ${text(issue?.title)}`,
      `Author: ${author}`,
      `Link: ${text(issue?.html_url, UNKNOWN, 500)}`,
    ].join('\n'),
  );
}

export default function github(ctx: TransformContext): AgentAction | null {
  const payload: Record<string, unknown> = ctx.payload !== null && typeof ctx.payload === 'object' ? ctx.payload : {};
  const event = text(ctx.headers?.['x-github-event'], UNKNOWN, 100);
  switch (event) {
    case 'ping':
      // Sent once when the webhook is created: nothing for the agent to do (hookgate answers 204).
      return null;
    case 'push':
      return push(payload as PushPayload);
    case 'pull_request':
      return pullRequest(payload as PullRequestPayload);
    case 'issues':
      return issues(payload as IssuesPayload);
    default: {
      const action = typeof payload.action === 'string' ? ` (${text(payload.action)})` : '';
      const repo = repoName(payload.repository as GitHubRepository | null | undefined);
      const sender = text((payload.sender as GitHubUser | null | undefined)?.login);
      return agent(`GitHub event ${event}${action} on ${repo} by ${sender}.`);
    }
  }
}

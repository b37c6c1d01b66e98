// A mapping's `respond`: the answer given when its action is accepted, for senders that expect their
// own (a Slack slash command wants 200 and may show a short text). A JSON value is sent as it is; a
// string is a template (it shows payload content only where a placeholder asks for it) sent as
// text/plain, which is what Slack shows to the user who typed the command.
import type { Template, TemplateContext } from './template.ts';
import { compileTemplate } from './template.ts';

export interface RespondConfig {
  status: 200 | 202;
  body?: unknown;
}

export interface Respond {
  readonly status: 200 | 202;
  /** A fixed JSON body, or none: the usual body with this status. */
  readonly json?: unknown;
  /** A text body, rendered for each request. */
  readonly text?: Template;
}

/** What is sent: JSON, text, or the usual body (undefined) with the mapping's status. */
export type Reply = { status: number; json?: unknown; text?: string };

export function compileRespond(
  r: RespondConfig,
  key: string,
  hidden: ReadonlySet<string>,
  problems: string[],
): Respond | undefined {
  if (typeof r.body !== 'string') return Object.freeze({ status: r.status, json: r.body });
  try {
    return Object.freeze({ status: r.status, text: compileTemplate(r.body, hidden) });
  } catch (err) {
    problems.push(`${key}.body: ${(err as Error).message}`);
    return undefined;
  }
}

export function renderReply(respond: Respond, ctx: TemplateContext): Reply {
  if (respond.text) return { status: respond.status, text: respond.text.render(ctx) };
  return { status: respond.status, json: respond.json };
}

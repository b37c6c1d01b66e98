// The channel senders: the one door to this folder. `resolveChannels` reads the `channels` block of
// a gateway config into one Channel per block that has credentials (the rest only record), with
// every problem named by its key; nothing is sent until a delivery or a check asks.

import { createHash } from 'node:crypto';
import { Channel } from './channel.ts';
import { discordSender } from './discord.ts';
import { imessageSender } from './imessage.ts';
import { mattermostSender } from './mattermost.ts';
import { msteamsSender } from './msteams.ts';
import { Redactor } from './redact.ts';
import { ChannelBlock, type RawChannel } from './settings.ts';
import { signalSender } from './signal.ts';
import { slackSender } from './slack.ts';
import { telegramSender } from './telegram.ts';
import type { PlatformSender } from './types.ts';
import { whatsappSender } from './whatsapp.ts';

export { Channel, type DeliveryResult, type DeliverOptions } from './channel.ts';
export type { CheckResult, SendOutcome } from './types.ts';
export { Redactor } from './redact.ts';

type Factory = (block: ChannelBlock, redactor: () => Redactor) => PlatformSender | undefined;

const PLATFORMS: Record<string, Factory> = {
  telegram: telegramSender,
  slack: slackSender,
  discord: discordSender,
  mattermost: mattermostSender,
  msteams: msteamsSender,
  signal: signalSender,
  whatsapp: whatsappSender,
  imessage: imessageSender,
};

export interface ResolvedChannels {
  /** The channels that send, by name; a configured channel missing here only records. */
  senders: ReadonlyMap<string, Channel>;
  /** Masks every secret of every channel: for any text about a channel that leaves the process. */
  redactor: Redactor;
  /** Those secrets, for the host's own list (GatewayHost.secrets). */
  secrets: readonly string[];
}

/**
 * Reads `channels.<name>` blocks (already checked against the schema). Problems are pushed with the
 * key they concern, e.g. "channels.telegram.botToken: environment variable TG_TOKEN is not set".
 */
export function resolveChannels(
  raw: Record<string, RawChannel | undefined> | undefined,
  configDir: string,
  problems: string[],
): ResolvedChannels {
  const secrets: string[] = [];
  let redactor = new Redactor([]);
  const senders = new Map<string, Channel>();
  for (const [name, block] of Object.entries(raw ?? {})) {
    const factory = Object.hasOwn(PLATFORMS, name) ? PLATFORMS[name] : undefined;
    if (!factory || !block) continue;
    const reader = new ChannelBlock(block, `channels.${name}`, configDir, problems);
    const sender = factory(reader, () => redactor);
    secrets.push(...reader.secrets);
    const fingerprint = createHash('sha256')
      .update(JSON.stringify([block, reader.secrets]))
      .digest('hex');
    if (sender) senders.set(name, new Channel(name, sender, fingerprint));
  }
  redactor = new Redactor(secrets);
  return { senders, redactor, secrets };
}

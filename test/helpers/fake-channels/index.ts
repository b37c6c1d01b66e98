// All eight fake platforms at once, and the gateway's channels block that points at them.
import { fakeBlueBubbles } from './imessage.ts';
import { fakeDiscord } from './discord.ts';
import type { FakePlatform } from './fake-platform.ts';
import { fakeMattermost } from './mattermost.ts';
import { fakeTeams } from './msteams.ts';
import { fakeSignal } from './signal.ts';
import { fakeSlack } from './slack.ts';
import { fakeTelegram } from './telegram.ts';
import { fakeWhatsApp } from './whatsapp.ts';

/** The credentials the fakes accept; each long enough to be worth redacting, and easy to search for. */
export const SECRETS = {
  telegram: '123456:TELEGRAM-secret-token-abcdef',
  slack: 'xoxb-SLACK-secret-token-abcdef',
  discordWebhookToken: 'DISCORD-webhook-secret-token-abcdef',
  discordBot: 'DISCORD-bot-secret-token-abcdef',
  mattermost: 'MATTERMOST-secret-token-abcdef',
  teamsSig: 'TEAMS-signature-secret-abcdef',
  whatsapp: 'WHATSAPP-secret-token-abcdef',
  imessage: 'IMESSAGE-secret-password-abcdef',
} as const;

export const SIGNAL_NUMBER = '+15550001111';
export const WHATSAPP_PHONE_ID = '106540352242922';
export const DISCORD_WEBHOOK_ID = '1234567890';
export const TEAMS_PATH = '/workflows/abc/triggers/manual/paths/invoke';

export interface Fakes {
  telegram: FakePlatform;
  slack: FakePlatform;
  discord: FakePlatform;
  mattermost: FakePlatform;
  msteams: FakePlatform;
  signal: FakePlatform;
  whatsapp: FakePlatform;
  imessage: FakePlatform;
  close(): Promise<void>;
}

export async function startFakes(): Promise<Fakes> {
  const [telegram, slack, discord, mattermost, msteams, signal, whatsapp, imessage] = await Promise.all([
    fakeTelegram(SECRETS.telegram),
    fakeSlack(SECRETS.slack),
    fakeDiscord(DISCORD_WEBHOOK_ID, SECRETS.discordWebhookToken, SECRETS.discordBot),
    fakeMattermost(SECRETS.mattermost),
    fakeTeams(TEAMS_PATH),
    fakeSignal(SIGNAL_NUMBER),
    fakeWhatsApp(WHATSAPP_PHONE_ID, SECRETS.whatsapp),
    fakeBlueBubbles(SECRETS.imessage),
  ]);
  const all = [telegram, slack, discord, mattermost, msteams, signal, whatsapp, imessage];
  return {
    telegram,
    slack,
    discord,
    mattermost,
    msteams,
    signal,
    whatsapp,
    imessage,
    close: async () => {
      await Promise.all(all.map((f) => f.close()));
    },
  };
}

/** A channels block with every channel sending to its fake (secrets literal, or from env/files when given). */
export function channelsConfig(f: Fakes, over: Record<string, Record<string, unknown>> = {}): Record<string, unknown> {
  const blocks: Record<string, Record<string, unknown>> = {
    telegram: { botToken: SECRETS.telegram, defaultTo: '1001', apiRoot: f.telegram.url },
    slack: { botToken: SECRETS.slack, defaultTo: 'C100', apiRoot: f.slack.url },
    discord: { webhookUrl: `${f.discord.url}/api/webhooks/${DISCORD_WEBHOOK_ID}/${SECRETS.discordWebhookToken}` },
    mattermost: { url: f.mattermost.url, token: SECRETS.mattermost, defaultTo: 'town-square-id' },
    msteams: { webhookUrl: `${f.msteams.url}${TEAMS_PATH}?api-version=1&sig=${SECRETS.teamsSig}` },
    signal: { url: f.signal.url, number: SIGNAL_NUMBER, defaultTo: '+15550002222' },
    whatsapp: {
      phoneNumberId: WHATSAPP_PHONE_ID,
      accessToken: SECRETS.whatsapp,
      defaultTo: '15550003333',
      apiRoot: f.whatsapp.url,
    },
    imessage: { url: f.imessage.url, password: SECRETS.imessage, defaultTo: 'iMessage;-;+15550004444' },
  };
  for (const [name, block] of Object.entries(over)) blocks[name] = { ...blocks[name], ...block };
  return blocks;
}

/** Fails naming the secret if any appears in `text`. */
export function assertNoSecret(text: string, where: string): void {
  for (const [name, secret] of Object.entries(SECRETS)) {
    if (text.includes(secret) || text.includes(encodeURIComponent(secret)))
      throw new Error(`the ${name} secret appears in ${where}`);
  }
}

// At start, what the queue's Redis would lose: an acknowledgement is only as durable as Redis keeps
// it. Warns when AOF is off or eviction may drop entries. CONFIG GET is refused on many managed
// Redis services: then INFO is read instead, and what neither tells is not guessed.
import type { Redis } from 'ioredis';

/** The warnings to log (none when Redis keeps what it took, or when it does not say). */
export async function persistenceWarnings(redis: Redis): Promise<string[]> {
  const { appendonly, policy } = await readSettings(redis);
  const warnings: string[] = [];
  if (appendonly === false) {
    warnings.push(
      'the queue Redis has AOF off (appendonly no): acknowledged actions since its last snapshot are lost if it stops; set appendonly yes',
    );
  }
  if (policy !== undefined && policy !== 'noeviction') {
    warnings.push(
      `the queue Redis evicts keys under memory pressure (maxmemory-policy ${policy}): queued actions may be dropped; set maxmemory-policy noeviction`,
    );
  }
  return warnings;
}

async function readSettings(redis: Redis): Promise<{ appendonly?: boolean; policy?: string }> {
  try {
    const reply = (await redis.call('CONFIG', 'GET', 'appendonly', 'maxmemory-policy')) as string[];
    const values = new Map<string, string>();
    for (let i = 0; i + 1 < reply.length; i += 2) values.set(reply[i]!, reply[i + 1]!);
    if (values.has('appendonly') || values.has('maxmemory-policy')) {
      const aof = values.get('appendonly');
      return {
        ...(aof === undefined ? {} : { appendonly: aof === 'yes' }),
        ...(values.has('maxmemory-policy') ? { policy: values.get('maxmemory-policy') } : {}),
      };
    }
  } catch {
    // Refused (a managed Redis): INFO below.
  }
  try {
    const info = `${await redis.info('persistence')}\n${await redis.info('memory')}`;
    const aof = /^aof_enabled:(\d)/m.exec(info)?.[1];
    const policy = /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
    return {
      ...(aof === undefined ? {} : { appendonly: aof === '1' }),
      ...(policy === undefined ? {} : { policy }),
    };
  } catch {
    return {};
  }
}

// A Lua script for the shared Redis, named by its digest so it is sent once per server (EVALSHA).
// Apart from shared-redis.ts so that the scripts' users can be loaded without the Redis client.
import { createHash } from 'node:crypto';

export interface Script {
  readonly source: string;
  readonly sha: string;
}

export function script(source: string): Script {
  return { source, sha: createHash('sha1').update(source).digest('hex') };
}

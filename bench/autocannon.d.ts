// The part of autocannon's API the benchmark and the tests use (the package ships no types).
declare module 'autocannon' {
  interface Histogram {
    average: number;
    mean: number;
    p50: number;
    p99: number;
  }
  export interface Result {
    requests: Histogram & { total: number };
    latency: Histogram;
    non2xx: number;
    errors: number;
    timeouts: number;
    '2xx': number;
    '4xx': number;
    '5xx': number;
  }
  export interface Options {
    url: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    connections?: number;
    pipelining?: number;
    duration?: number;
    /** Stops after this many requests instead of after `duration`. */
    amount?: number;
    /** Each request may be changed before it is sent (a header per request). */
    requests?: { setupRequest?(req: { headers: Record<string, string> }): { headers: Record<string, string> } }[];
  }
  export default function autocannon(opts: Options): Promise<Result>;
}

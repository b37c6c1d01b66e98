// Our counter and histogram are exposed exactly as prom-client's own would be for the same updates.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Counter, Histogram, Registry } from 'prom-client';
import { FastCounter, FastHistogram } from '../../plugin/observe/fast-series.ts';

const BUCKETS = [0.001, 0.01, 0.1, 1];
const LABELS = ['endpoint', 'mapping'] as const;

test("the exposition matches prom-client's, series for series and bucket for bucket", async () => {
  const ours = new Registry();
  const theirs = new Registry();
  const fast = new FastHistogram('t_seconds', 'Help text.', LABELS, BUCKETS, ours);
  const prom = new Histogram({
    name: 't_seconds',
    help: 'Help text.',
    labelNames: LABELS,
    buckets: BUCKETS,
    registers: [theirs],
  });
  const fastCount = new FastCounter('t_total', 'Counted.', LABELS, ours);
  const promCount = new Counter({ name: 't_total', help: 'Counted.', labelNames: LABELS, registers: [theirs] });
  const observations: [string, string, number][] = [
    ['wake', '', 0.0005],
    ['wake', '', 0.001],
    ['wake', '', 0.05],
    ['mapping', 'c"i', 3],
    ['wake', '', 1],
    ['mapping', 'c"i', 0],
  ];
  for (const [endpoint, mapping, v] of observations) {
    fast.series(endpoint, mapping).observe(v);
    prom.labels(endpoint, mapping).observe(v);
    fastCount.series(endpoint, mapping).inc();
    promCount.labels(endpoint, mapping).inc();
  }
  assert.equal(await ours.metrics(), await theirs.metrics());
  ours.resetMetrics();
  theirs.resetMetrics();
  assert.equal(await ours.metrics(), await theirs.metrics());
});

// What `hookgate config check` shows of a good config: the hooks settings that shape every request,
// and the mappings as a table (which name, what action, how it is admitted, transformed, deduplicated).
import path from 'node:path';
import type { HooksSnapshot } from '../../../../host-kit.ts';
import { formatTable } from '../../../../util/table.ts';

type Mapping = HooksSnapshot['mappings'][number];

export function configSummary(snap: HooksSnapshot): string {
  const lines = [
    `hooks         ${snap.enabled ? `enabled at ${snap.path}` : 'disabled'}`,
    `body limit    ${snap.maxBodyBytes} bytes`,
    `presets       ${snap.presets.join(', ') || '(none)'}`,
  ];
  if (snap.mappings.length === 0) return [...lines, 'mappings      (none)'].join('\n');
  const table = formatTable<Mapping>(
    [
      { header: 'ID', cell: (m) => m.id },
      { header: 'PATH', cell: (m) => (m.matchPath === undefined ? '(any)' : `${snap.path}/${m.matchPath}`) },
      { header: 'SOURCE', cell: (m) => m.matchSource },
      { header: 'ACTION', cell: (m) => (m.producer ? `${m.action} (${m.producer.name} preset)` : m.action) },
      {
        header: 'ADMITTED BY',
        cell: (m) =>
          (m.verifier ? `${m.verifier.scheme} signature` : 'hook token') +
          (m.handshake ? `, ${m.handshake.kind} handshake` : ''),
      },
      { header: 'TRANSFORM', cell: (m) => (m.transform ? path.basename(m.transform.file) : '') },
      { header: 'FOREACH', cell: (m) => m.forEach?.path },
      { header: 'DEDUPE', cell: (m) => m.dedupeKey?.source, max: 40 },
    ],
    snap.mappings,
  );
  return [...lines, '', table].join('\n');
}

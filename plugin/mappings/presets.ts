// The presets hooks.presets may name: mappings that ship with the plugin, each with its producer.
import type { Preset } from './mapping.ts';
import { GMAIL } from './gmail.ts';

export const PRESETS: ReadonlyMap<string, Preset> = new Map([[GMAIL.name, GMAIL]]);

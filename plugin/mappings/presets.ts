// The presets hooks.presets may name: mappings that ship with the plugin, each with its producer, and
// each reading its own block of the hooks config under its name.
import type { Preset } from './mapping.ts';
import { GMAIL, type GmailPresetBlock } from './gmail.ts';

export const PRESETS: ReadonlyMap<string, Preset> = new Map([[GMAIL.name, GMAIL]]);

/** The hooks block's keys that belong to a preset: its name, holding its own settings. */
export interface PresetBlocks {
  gmail?: GmailPresetBlock;
}

// The standalone host's storage: the one door to this folder (README.md states its durability
// contract). Nothing else under storage/ is imported from outside it (a lint zone says so).
export { Storage } from './storage.ts';
export { DEFAULT_STORAGE_LIMITS, type StorageLimits } from './storage-limits.ts';
export {
  DEFAULT_STORAGE_SETTINGS,
  type FsyncMode,
  type FsyncSettings,
  type StorageSettings,
} from './storage-settings.ts';
export { agentIdOfKey, BadCursorError, type SessionStore } from './session-store.ts';
export { isUnsettledDelivery } from './outbox.ts';
export type { Outbox, UnsettledDelivery, DeliveryState, DeliveryAttempt } from './outbox.ts';
export type { RunRegistry } from './run-registry.ts';

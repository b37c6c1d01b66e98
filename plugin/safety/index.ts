// The marker neutraliser: wraps untrusted text between markers a payload cannot forge (README.md beside
// this file states the guarantee and its limits). This is the folder's one entry.
export { unwrapExternalContent, wrapExternalContent, type WrapOptions } from './external-content.ts';
export { sanitizeMarkers } from './sanitize-markers.ts';

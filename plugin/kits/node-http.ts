// For a host that runs its own node:http server around the plugin: the protocol answers the plugin
// cannot give itself (a malformed request, an Expect it does not know), the client address behind
// trusted proxies, the gateway token's check and the failure limiter, and the rate-limited warnings
// a stranger can cause.
export { answerClientError, answerExpectation } from '../http/protocol-errors.ts';
export { clientAddress } from '../http/client-address.ts';
export { addressKey } from '../http/address-key.ts';
export type { TrustedProxies } from '../http/trusted-proxies.ts';
export { digestToken, extractToken, tokenMatches, type TokenDigest } from '../auth/token.ts';
export { AuthFailureLimiter } from '../auth/limiter.ts';
export { LimitedWarnings } from '../observe/limited-warnings.ts';

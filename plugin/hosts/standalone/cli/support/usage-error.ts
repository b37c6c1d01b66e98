// The error that means "wrong usage" (exit 2). A file of its own: the router and the lightest
// commands load it without what the other shared helpers need.
export class UsageError extends Error {}

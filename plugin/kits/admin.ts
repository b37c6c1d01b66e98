// For a host serving the core's admin routes: the admin call's shape and how a request becomes one.
export { AdminAnswer, type AdminCall } from '../admin/admin-call.ts';
export { adminCallOf, requestsLimit } from '../admin/admin-http.ts';

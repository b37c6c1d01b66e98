// For a host serving the core's admin routes: the admin call's shape, how a request becomes one,
// how an answer (JSON, or a stream of server-sent events) is written, and the request log's
// outcome classes.
export { AdminAnswer, AdminStream, type AdminCall } from '../admin/admin-call.ts';
export { adminCallOf } from '../admin/admin-http.ts';
export { writeAdminAnswer } from '../admin/admin-answer.ts';
export { OUTCOMES } from '../request-log/entry.ts';

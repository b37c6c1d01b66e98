// For a host serving the console (the owner's web page): the door it mounts at its path, and what
// the door asks of it (the owner's token, the admin API's handlers, the lockout).
export { ConsoleDoor, CSRF_HEADER, SESSION_COOKIE, type ConsoleDeps } from '../console/console-door.ts';

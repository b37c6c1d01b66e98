// The request target as a path and a query. Besides the usual origin form (`/hooks/wake?x`), a
// server must accept the absolute form (`http://host/hooks/wake`, RFC 9112 section 3.2.2).

const ABSOLUTE = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i;

export interface RequestTarget {
  pathname: string;
  /** What follows '?', or undefined when there is no query. */
  query: string | undefined;
}

export function splitTarget(url: string): RequestTarget {
  let target = url;
  if (target.charCodeAt(0) !== 47 /* / */) {
    const scheme = ABSOLUTE.exec(target);
    if (scheme) target = target.slice(scheme[0].length) || '/';
  }
  const q = target.indexOf('?');
  return q === -1
    ? { pathname: target, query: undefined }
    : { pathname: target.slice(0, q), query: target.slice(q + 1) };
}

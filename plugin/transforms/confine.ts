// Confinement of transform modules: a `transform.module` (and `hooks.transformsDir`) may only name
// something inside the transforms root, judged both by how it is written and by where it really lives
// once every symlink on the way is followed, and having no other name (hard link) that could lie
// anywhere else. Every refusal names the config key and says why.
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { errnoCode } from '../util/errors.ts';

/** Extensions a transform module may have (what the worker's loader handles). */
export const TRANSFORM_EXTENSIONS: readonly string[] = ['.ts', '.mts', '.js', '.mjs', '.cjs'];

const SCHEME_RE = /^[A-Za-z][A-Za-z0-9+.-]*:/;

function shown(value: string): string {
  const quoted = JSON.stringify(value);
  return quoted.length > 120 ? `${quoted.slice(0, 117)}..."` : quoted;
}

function refuse(where: string, value: string, why: string): never {
  throw new Error(`${where} ${shown(value)} ${why}`);
}

/** `child` is `parent` itself or lies beneath it (both absolute, already normalized). */
function isWithin(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

/** Spelling checks shared by modules and directories; returns why the value is refused, if it is. */
function spellingProblem(value: string, allowAbsolute: boolean): string | undefined {
  if (value.trim() === '') return 'must be a non-empty path';
  if (value.includes('\0')) return 'contains a NUL byte';
  if (value.includes('\\')) return 'contains a backslash (use "/" to separate folders)';
  if (value.startsWith('~'))
    return 'starts with "~" (home directories are not expanded; give a path relative to the transforms directory)';
  if (SCHEME_RE.test(value))
    return 'looks like a URL or a drive path ("scheme:" prefix); give a path relative to the transforms directory';
  if (!allowAbsolute && (path.isAbsolute(value) || value.startsWith('/'))) {
    return 'is an absolute path; give a path relative to the transforms directory';
  }
  return undefined;
}

async function realRootOf(root: string): Promise<string | undefined> {
  try {
    return await fsp.realpath(root);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') return undefined;
    throw err;
  }
}

/**
 * Resolves `module` (as written in the config) inside `dir`, refusing anything that escapes `root`
 * (the transforms root). Returns the real (symlink-resolved) absolute path of the module file.
 */
export async function confineModule(root: string, dir: string, module: string, where: string): Promise<string> {
  if (typeof module !== 'string') refuse(where, String(module), 'must be a string');
  const spelling = spellingProblem(module, false);
  if (spelling) refuse(where, module, spelling);
  const segments = module.split('/');
  if (segments.includes('..')) refuse(where, module, 'contains ".." (parent-directory traversal is not allowed)');
  if (module.endsWith('/')) refuse(where, module, 'names a directory, not a module file');
  const ext = path.extname(module);
  if (!TRANSFORM_EXTENSIONS.includes(ext)) {
    refuse(
      where,
      module,
      `has ${ext ? `the extension "${ext}"` : 'no extension'}; a transform must be one of ${TRANSFORM_EXTENSIONS.join(' ')}`,
    );
  }

  const absRoot = path.resolve(root);
  const realRoot = await realRootOf(absRoot);
  if (realRoot === undefined) refuse(where, module, `does not exist (the transforms root ${absRoot} is missing)`);

  const absDir = path.resolve(absRoot, dir);
  let realDir: string;
  try {
    realDir = await fsp.realpath(absDir);
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOENT' || code === 'ENOTDIR')
      refuse(where, module, `does not exist (the transforms directory ${absDir} is missing)`);
    refuse(where, module, `cannot be checked: ${code ?? (err as Error).message}`);
  }
  if (!isWithin(realRoot, realDir)) {
    refuse(
      where,
      module,
      'lies in a transforms directory that resolves (through a symlink) outside the transforms root',
    );
  }

  const candidate = path.join(absDir, module);
  let isLink: boolean;
  try {
    isLink = (await fsp.lstat(candidate)).isSymbolicLink();
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOENT') refuse(where, module, `does not exist in the transforms directory ${absDir}`);
    if (code === 'ENOTDIR') refuse(where, module, 'does not exist (a part of its path is not a directory)');
    refuse(where, module, `cannot be checked: ${code ?? (err as Error).message}`);
  }

  let real: string;
  try {
    real = await fsp.realpath(candidate);
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOENT' || code === 'ENOTDIR') refuse(where, module, 'is a symlink whose target does not exist');
    if (code === 'ELOOP') refuse(where, module, 'is a symlink loop');
    refuse(where, module, `cannot be checked: ${code ?? (err as Error).message}`);
  }
  if (!isWithin(realRoot, real) || real === realRoot) {
    refuse(
      where,
      module,
      isLink
        ? 'is a symlink that points outside the transforms root'
        : 'resolves outside the transforms root (a directory on its path is a symlink)',
    );
  }

  let stats: Awaited<ReturnType<typeof fsp.stat>>;
  try {
    stats = await fsp.stat(real);
  } catch (err) {
    refuse(where, module, `cannot be checked: ${errnoCode(err) ?? (err as Error).message}`);
  }
  if (!stats.isFile()) refuse(where, module, 'is not a regular file');
  // A hard link is the same file under another name, and nothing here tells where the other names are:
  // one outside the root (in a folder someone else writes, say) would change the code we run.
  if (stats.nlink > 1) {
    refuse(
      where,
      module,
      `has ${stats.nlink} hard links; a transform must have only its own name (copy the file instead of linking it)`,
    );
  }
  const realExt = path.extname(real);
  if (!TRANSFORM_EXTENSIONS.includes(realExt)) {
    refuse(
      where,
      module,
      `is a symlink to a file with ${realExt ? `the extension "${realExt}"` : 'no extension'}; a transform must be one of ${TRANSFORM_EXTENSIONS.join(' ')}`,
    );
  }
  return real;
}

/**
 * The transforms directory itself (hooks.transformsDir, absolute or relative to `root`): it must lie
 * inside `root`, as written and after every symlink is followed. A missing directory is accepted only
 * when it is the root itself (then `root` is returned). Returns the real path of the directory.
 */
export async function confineDir(root: string, dir: string, where: string): Promise<string> {
  if (typeof dir !== 'string') refuse(where, String(dir), 'must be a string');
  const spelling = spellingProblem(dir, true);
  if (spelling) refuse(where, dir, spelling);

  const absRoot = path.resolve(root);
  const absDir = path.resolve(absRoot, dir);
  if (!isWithin(absRoot, absDir)) refuse(where, dir, `must stay inside the transforms root ${absRoot}`);
  const isRoot = absDir === absRoot;

  const realRoot = await realRootOf(absRoot);
  if (realRoot === undefined) {
    if (isRoot) return absRoot;
    refuse(where, dir, `does not exist (the transforms root ${absRoot} is missing)`);
  }

  let realDir: string;
  try {
    realDir = await fsp.realpath(absDir);
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOENT') {
      // A dangling symlink is not "missing": say what it is.
      const dangling = await fsp.lstat(absDir).then(
        (s) => s.isSymbolicLink(),
        () => false,
      );
      if (dangling) refuse(where, dir, 'is a symlink whose target does not exist');
      refuse(where, dir, 'does not exist');
    }
    if (code === 'ENOTDIR') refuse(where, dir, 'does not exist (a part of its path is not a directory)');
    if (code === 'ELOOP') refuse(where, dir, 'is a symlink loop');
    refuse(where, dir, `cannot be checked: ${code ?? (err as Error).message}`);
  }
  if (!isWithin(realRoot, realDir)) {
    refuse(where, dir, 'resolves (through a symlink) to a directory outside the transforms root');
  }
  let isDir: boolean;
  try {
    isDir = (await fsp.stat(realDir)).isDirectory();
  } catch (err) {
    refuse(where, dir, `cannot be checked: ${errnoCode(err) ?? (err as Error).message}`);
  }
  if (!isDir) refuse(where, dir, 'is not a directory');
  return realDir;
}

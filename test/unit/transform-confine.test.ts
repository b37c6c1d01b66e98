// Confinement of transform module paths (plugin/transforms/confine.ts): by spelling, through symlinks
// and hard links. Fixture trees are written to temp dirs here.
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { confineDir, confineModule } from '../../plugin/transforms/index.ts';
import { tmp, write } from '../helpers/transform-modules.ts';

describe('confineModule', () => {
  let base: string; // holds root/ and outside/
  let root: string;
  let outside: string;
  const WHERE = 'hooks.mappings[2].transform.module';

  before(() => {
    base = tmp('hookgate-confine-');
    root = path.join(base, 'config', 'hooks', 'transforms');
    outside = path.join(base, 'outside');
    write(path.join(root, 'ok.ts'), 'export default () => null;\n');
    write(path.join(root, 'sub', 'ok.ts'), 'export default () => null;\n');
    write(path.join(root, 'data.json'), '{}');
    write(path.join(root, 'noext'), '');
    fs.mkdirSync(path.join(root, 'folder.ts'));
    write(path.join(outside, 'evil.ts'), 'export default () => ({ evil: true });\n');
    write(path.join(outside, 'secret.txt'), 'x');
    fs.symlinkSync(path.join(outside, 'evil.ts'), path.join(root, 'link-out.ts'));
    fs.symlinkSync(outside, path.join(root, 'dir-out'));
    fs.symlinkSync(path.join(root, 'sub', 'ok.ts'), path.join(root, 'link-in.ts'));
    fs.symlinkSync(path.join(root, 'data.json'), path.join(root, 'link-json.ts'));
    fs.symlinkSync(path.join(root, 'nowhere.ts'), path.join(root, 'dangling.ts'));
    fs.symlinkSync(outside, path.join(base, 'config', 'hooks', 'dir-link-out'));
    fs.mkdirSync(path.join(root, 'team'));
    fs.symlinkSync(outside, path.join(root, 'team', 'escape'));
  });

  async function refused(module: string, why: RegExp, dir = root): Promise<void> {
    await assert.rejects(confineModule(root, dir, module, WHERE), (err: Error) => {
      assert.ok(err.message.startsWith(`${WHERE} `), `names the key: ${err.message}`);
      assert.match(err.message, why);
      assert.ok(!err.message.includes('\n'), 'one line');
      return true;
    });
  }

  test('refuses paths spelled to escape', async () => {
    await refused('../x.ts', /"\.\."/);
    await refused('sub/../../x.ts', /"\.\."/);
    await refused('..', /"\.\."|extension/);
    await refused(path.join(outside, 'evil.ts'), /absolute path/);
    await refused('/x.ts', /absolute path/);
    await refused('~/x.ts', /"~"/);
    await refused('~root/x.ts', /"~"/);
    await refused('file:///x.ts', /URL/);
    await refused('http://x', /URL/);
    await refused('data:text/javascript,export default 1', /URL/);
    await refused('C:/x.ts', /URL or a drive/);
    await refused('ok\0.ts', /NUL byte/);
    await refused('sub\\ok.ts', /backslash/);
    await refused('..\\x.ts', /backslash/);
    await refused('', /non-empty/);
  });

  test('refuses missing files, non-files and wrong extensions', async () => {
    await refused('missing.ts', /does not exist/);
    await refused('nodir/missing.ts', /does not exist/);
    await refused('ok.ts/x.ts', /does not exist/);
    await refused('data.json', /extension "\.json"/);
    await refused('noext', /no extension/);
    await refused('ok.TS', /extension/);
    await refused('folder.ts', /not a regular file/);
    await refused('dangling.ts', /symlink whose target does not exist/);
    await refused('link-json.ts', /symlink to a file with the extension "\.json"/);
  });

  test('refuses symlinks (file, directory on the way, or the dir itself) that leave the root', async () => {
    await refused('link-out.ts', /symlink that points outside/);
    await refused('dir-out/evil.ts', /outside the transforms root/);
    await refused('team/escape/evil.ts', /outside the transforms root/);
    // `dir` itself is a symlink leading out.
    await refused('evil.ts', /outside the transforms root/, path.join(root, 'dir-out'));
    await refused('evil.ts', /outside the transforms root/, path.join(base, 'config', 'hooks', 'dir-link-out'));
  });

  test('accepts good paths and returns the real path', async () => {
    assert.equal(await confineModule(root, root, 'ok.ts', WHERE), path.join(root, 'ok.ts'));
    assert.equal(await confineModule(root, root, 'sub/ok.ts', WHERE), path.join(root, 'sub', 'ok.ts'));
    assert.equal(await confineModule(root, root, './sub/ok.ts', WHERE), path.join(root, 'sub', 'ok.ts'));
    assert.equal(await confineModule(root, path.join(root, 'sub'), 'ok.ts', WHERE), path.join(root, 'sub', 'ok.ts'));
    // A symlink that stays inside the root resolves to its target.
    assert.equal(await confineModule(root, root, 'link-in.ts', WHERE), path.join(root, 'sub', 'ok.ts'));
    // The root reached through a symlink is fine: comparisons use real paths.
    const viaLink = path.join(base, 'root-link');
    fs.symlinkSync(root, viaLink);
    assert.equal(await confineModule(viaLink, viaLink, 'sub/ok.ts', WHERE), path.join(root, 'sub', 'ok.ts'));
    for (const ext of ['.mts', '.js', '.mjs', '.cjs']) {
      write(path.join(root, `m${ext}`), '');
      assert.equal(await confineModule(root, root, `m${ext}`, WHERE), path.join(root, `m${ext}`));
    }
  });

  test('a missing root means a missing module', async () => {
    await assert.rejects(
      confineModule(path.join(base, 'nope'), path.join(base, 'nope'), 'x.ts', WHERE),
      /^Error: hooks\.mappings\[2\]\.transform\.module "x\.ts" does not exist/,
    );
  });
});

describe('confineDir', () => {
  let base: string;
  let root: string;
  const WHERE = 'hooks.transformsDir';

  before(() => {
    base = tmp('hookgate-confine-dir-');
    root = path.join(base, 'hooks', 'transforms');
    fs.mkdirSync(path.join(root, 'team-a', 'nested'), { recursive: true });
    fs.mkdirSync(path.join(base, 'outside'));
    write(path.join(root, 'file.ts'), '');
    fs.symlinkSync(path.join(base, 'outside'), path.join(root, 'out-link'));
    fs.symlinkSync(path.join(root, 'team-a'), path.join(root, 'in-link'));
  });

  async function refused(dir: string, why: RegExp, r = root): Promise<void> {
    await assert.rejects(confineDir(r, dir, WHERE), (err: Error) => {
      assert.ok(err.message.startsWith(`${WHERE} `), err.message);
      assert.match(err.message, why);
      return true;
    });
  }

  test('accepts the root and folders inside it, returning real paths', async () => {
    assert.equal(await confineDir(root, root, WHERE), root);
    assert.equal(await confineDir(root, path.join(root, 'team-a'), WHERE), path.join(root, 'team-a'));
    assert.equal(await confineDir(root, 'team-a/nested', WHERE), path.join(root, 'team-a', 'nested'));
    assert.equal(await confineDir(root, path.join(root, 'in-link'), WHERE), path.join(root, 'team-a'));
  });

  test('a missing directory is allowed only when it is the root itself', async () => {
    const missingRoot = path.join(base, 'no-config', 'hooks', 'transforms');
    assert.equal(await confineDir(missingRoot, missingRoot, WHERE), missingRoot);
    await refused(path.join(missingRoot, 'team'), /does not exist/, missingRoot);
    await refused(path.join(root, 'team-b'), /does not exist/);
  });

  test('refuses directories outside the root, by spelling or through symlinks', async () => {
    await refused(path.join(base, 'outside'), /must stay inside/);
    await refused('../outside', /must stay inside/);
    await refused(path.join(root, 'out-link'), /outside the transforms root/);
    await refused(path.join(root, 'file.ts'), /not a directory/);
    await refused('team\0', /NUL byte/);
    await refused('team\\a', /backslash/);
    await refused('~/x', /"~"/);
    await refused('file:///etc', /URL/);
  });

  test('confineModule refuses a module when transformsDir is a symlink leading out', async () => {
    write(path.join(base, 'outside', 'x.ts'), '');
    await assert.rejects(confineModule(root, path.join(root, 'out-link'), 'x.ts', 'm'), /outside the transforms root/);
  });
});

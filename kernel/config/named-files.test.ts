import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { LocalFetches } from '../resources/shared-fetches.ts';
import { readSharedFile } from '../sdk/read-file.ts';
import { NamedFiles, namedFilesChanged } from './named-files.ts';

const dir = mkdtempSync(join(tmpdir(), 'switchyard-named-files-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('NamedFiles (ADR 0184)', () => {
  it('notes the files a compile reads, not those their owner watches, and sees a new version', async () => {
    const key = join(dir, 'key');
    const owned = join(dir, 'owned');
    writeFileSync(key, 'one');
    writeFileSync(owned, 'x');
    const files = new NamedFiles(new LocalFetches());
    assert.equal(await readSharedFile(files, key, 1024), 'one');
    assert.equal(await readSharedFile(files, owned, 1024, { watched: true }), 'x');
    assert.deepEqual([...files.stamps.keys()], [key]);
    assert.equal(await namedFilesChanged(files.stamps), false);
    // Replaced by rename, as an editor or the kubelet's `..data` swap does.
    writeFileSync(join(dir, 'key.new'), 'two');
    renameSync(join(dir, 'key.new'), key);
    assert.equal(await namedFilesChanged(files.stamps), true);
    rmSync(key);
    assert.equal(await namedFilesChanged(files.stamps), true);
  });
});

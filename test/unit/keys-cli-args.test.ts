// `switchyard keys` arguments: a flag whose value is missing is a usage error (exit 2) before anything is sent, even
// when another flag follows it (`--model --admin X` named a model `--admin` and then refused `X`).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keysMain } from '../../kernel/boot/keys-cli.ts';

async function run(...argv: string[]): Promise<{ code: number; err: string }> {
  const err: string[] = [];
  const code = await keysMain(argv, () => undefined, (s) => err.push(s));
  return { code, err: err.join('') };
}

describe('switchyard keys arguments', () => {
  it('a flag followed by another flag has no value: exit 2, saying which', async () => {
    for (const flag of ['--model', '--owner', '--team', '--budget', '--route', '--meta']) {
      const r = await run('create', flag, '--admin', '127.0.0.1:1');
      assert.equal(r.code, 2, flag);
      assert.match(r.err, new RegExp(`^switchyard: ${flag} needs a value`), flag);
    }
    const last = await run('create', '--admin', '127.0.0.1:1', '--model');
    assert.equal(last.code, 2);
    assert.match(last.err, /^switchyard: --model needs a value/);
  });

  it('an --admin URL carrying credentials is refused without echoing them (ADR 0136: the key goes in ADMIN_API_KEY)', async () => {
    const r = await run('list', '--admin', 'http://ops:hunter2-secret@127.0.0.1:1');
    assert.equal(r.code, 1);
    assert.match(r.err, /must not carry credentials.*ADMIN_API_KEY/);
    assert.doesNotMatch(r.err, /hunter2/);
    const bare = await run('list', '--admin', 'ops:hunter2-secret@127.0.0.1:1');
    assert.equal(bare.code, 1);
    assert.doesNotMatch(bare.err, /hunter2/);
  });

  it('an admin key no header can carry is refused before anything is sent, without echoing it', async () => {
    const r = await run('list', '--admin', '127.0.0.1:1', '--admin-key', 'admin key\nwith-newline');
    assert.equal(r.code, 1);
    assert.match(r.err, /must be printable ASCII without spaces/);
    assert.doesNotMatch(r.err, /with-newline|cannot reach/);
  });

  it('--admin-key needs a value', async () => {
    const r = await run('list', '--admin-key', '--admin', '127.0.0.1:1');
    assert.equal(r.code, 2);
    assert.match(r.err, /^switchyard: --admin-key needs a value/);
  });
});

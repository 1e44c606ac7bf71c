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

  // `--model "$MODEL"` with the variable unset reached the API, whose "`models` must be a list of names" named no flag.
  it('an empty value (an unset shell variable) is no value: exit 2, saying which flag', async () => {
    for (const flag of ['--model', '--owner', '--team', '--name', '--route', '--admin', '-f']) {
      const r = await run('create', flag, '', '--admin', '127.0.0.1:1');
      assert.equal(r.code, 2, flag);
      assert.match(r.err, new RegExp(`^switchyard: ${flag} needs a value`), flag);
    }
  });

  it('a misspelt command or flag: exit 2 naming the one meant (did you mean)', async () => {
    const lst = await run('lst');
    assert.equal(lst.code, 2);
    assert.equal(lst.err.split('\n')[0], 'switchyard: unknown keys command `lst`; did you mean `list`?');
    const owner = await run('create', '--ownr', 'ana', '--admin', '127.0.0.1:1');
    assert.equal(owner.code, 2);
    assert.equal(owner.err.split('\n')[0], 'switchyard: unknown argument `--ownr`; did you mean `--owner`?');
    // A flag of another command is named for what it is, not guessed at.
    const team = await run('show', 'k1', '--budget', 'usd=1/day');
    assert.equal(team.code, 2);
    assert.equal(team.err.split('\n')[0], 'switchyard: unknown argument `--budget`');
    const none = await run('frobnicate');
    assert.equal(none.err.split('\n')[0], 'switchyard: unknown keys command `frobnicate`');
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

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseDocument } from 'yaml';
import { buildRegistry } from '../../kernel/boot/build-registry.ts';
import { assembleSchema } from '../../kernel/config/assemble-schema.ts';
import type { ConfigLoadError } from '../../kernel/config/format-issues.ts';
import { parseConfigText, validateParsed } from '../../kernel/config/load-config.ts';
import { ConfigValidator } from '../../kernel/config/validate-config.ts';
import { BASIC_PRESET, compileError, headlines, yaml } from './helpers.ts';

// Issue 14 item 8: a large config is parsed without node positions (js-yaml, about 6× faster than the positioned
// `yaml` parse); the positioned parse runs only when an error must be shown, or for what needs it (`${VAR}`).

const positioned = (text: string): unknown => parseDocument(text, { uniqueKeys: true, merge: true, strict: true }).toJS();

describe('config load: the parse without positions', () => {
  it('plain YAML and JSON take it; `${VAR}`, anchors, aliases, tags, merge keys and directives do not', () => {
    assert.equal(parseConfigText('c.yaml', yaml('binds:', '  - port: 8080', '    listeners: []')).positionless, true);
    assert.equal(parseConfigText('c.json', '{"binds": [{"port": 8080, "listeners": []}]}').positionless, true);
    // CEL operators are not YAML indicators.
    assert.equal(parseConfigText('c.yaml', yaml('a: x != y && !z', 'b: 2 * 3')).positionless, undefined, '`!z` looks like a tag: positioned');
    assert.equal(parseConfigText('c.yaml', yaml('a: x != y && z', 'b: 2 * 3')).positionless, true);
    for (const text of ['a: ${PORT}', 'a: &x 1\nb: *x', 'a: !!str 1', 'a: {b: 1}\nc:\n  <<: {d: 2}', '%YAML 1.1\n---\na: yes', '? a\n: 1', '{"a":&x [1], "b":*x}']) {
      assert.notEqual(parseConfigText('c.yaml', text, { PORT: '1' }).positionless, true, text);
    }
  });

  it('gives the values the positioned parse gives (YAML 1.2 core schema)', () => {
    const text = yaml(
      'ints: [1, -2, +3, 007, 0o17, 0x1F]',
      'floats: [1.5, .5, -1e3, 1.0, .inf, -.Inf]',
      'words: [yes, no, on, True, FALSE, ~, null, Null, 2001-12-14, 1_000, 0b11]',
      'quoted: ["a\\tb", \'it\'\'s\', "\\u00e9"]',
      'literal: |',
      '  one',
      '  two',
      'folded: >-',
      '  one',
      '  two',
      'url: http://x:80/a#b',
      'empty:',
    );
    const parsed = parseConfigText('c.yaml', text);
    assert.equal(parsed.positionless, true);
    assert.deepEqual(parsed.value, positioned(text));
  });

  it('falls back to the positioned parse for what it refuses: duplicate keys and syntax errors keep their positions', async () => {
    assert.equal(parseConfigText('c.yaml', 'a: 1\nb: 2\n').positionless, true);
    assert.throws(() => parseConfigText('c.yaml', 'a: 1\na: 2\n'), /c\.yaml:2:1/);
    const err = await compileError(yaml('binds:', '  - port: 8080', '    listeners:', '      - routes: []', '    port: 8081'));
    assert.match(headlines(err)[0]!, /^test\.yaml:5:5: /);
  });

  it('an invalid config parsed without positions is reported with line, column and path', async () => {
    const err = await compileError(yaml('binds:', '  - port: 8080', '    listners:', '      - routes: []'));
    assert.deepEqual(headlines(err), [
      'test.yaml:3:5: unknown key `listners`; did you mean `listeners`? (at binds[0].listners) [SWY_ERR_CONFIG_UNKNOWN_KEY]',
    ]);
  });

  it('an invalid config parsed without positions is validated once (the positioned parse only places the problems)', async () => {
    // Before: validated again on the positioned parse, so `--validate-only` and a reload checked a bad file twice.
    const registry = await buildRegistry(BASIC_PRESET, [], undefined);
    const validator = new ConfigValidator(assembleSchema(registry), [], { slotNouns: registry.slotNouns(), checkSchema: false });
    let calls = 0;
    const validate = validator.validate.bind(validator);
    validator.validate = (...args) => {
      calls++;
      return validate(...args);
    };
    const parsed = parseConfigText('c.yaml', yaml('binds:', '  - port: 8080', '    listners:', '      - routes: []', '  - port: 8081', '    listeners: 3'));
    assert.equal(parsed.positionless, true);
    const err = (() => {
      try {
        validateParsed(parsed, validator);
      } catch (e) {
        return e as ConfigLoadError;
      }
      assert.fail('the config validated');
    })();
    assert.equal(calls, 1);
    assert.deepEqual(
      err.issues.map((i) => `${i.line}:${i.col} ${i.path}`),
      ['3:5 binds[0].listners', '6:16 binds[1].listeners'],
    );
    assert.match(err.issues[0]!.frame, /> 3 \|     listners:/);
  });
});

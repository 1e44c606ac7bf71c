// Loading and parsing the OpenAPI document, the base path from `servers`, `$ref` resolution and the
// OpenAPI 3.0 → JSON Schema mapping, and the connection fields.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { withYamlParser } from 'switchyard/sdk';
import { parseConnection } from './connection.ts';
import { parseDocument, readDocumentFile, serverBasePath } from './document.ts';
import type { OpenApiDocument } from './document.ts';
import { RefResolver } from './refs.ts';

const doc = (extra: Record<string, unknown>): OpenApiDocument => ({ openapi: '3.0.3', info: { title: 't', version: '1' }, paths: {}, ...extra }) as OpenApiDocument;

/** `text` parsed by parseDocument in under half the time of `yaml`'s parse, to the same values (returned). */
function assertFastParse(text: string): OpenApiDocument {
  const timed = (parse: () => unknown): number => {
    const started = performance.now();
    parse();
    return performance.now() - started;
  };
  const slow = timed(() => withYamlParser(({ parse }) => parse(text, { uniqueKeys: false })));
  const fast = timed(() => parseDocument(text, 'big.yaml'));
  assert.ok(fast < slow / 2, `parseDocument ${Math.round(fast)} ms, yaml's parse ${Math.round(slow)} ms`);
  const expected = withYamlParser(({ parse }) => parse(text, { uniqueKeys: false })) as OpenApiDocument;
  assert.deepEqual(parseDocument(text, 'big.yaml'), expected);
  return expected;
}

describe('parseDocument', () => {
  it('reads JSON and YAML', () => {
    assert.equal(parseDocument('{"openapi":"3.1.0","paths":{}}', 'a.json').openapi, '3.1.0');
    assert.deepEqual(parseDocument('openapi: 3.0.3\npaths:\n  /x: {}\n', 'a.yaml').paths, { '/x': {} });
  });

  it('a YAML map of 40,000 keys parses in linear time (the duplicate-key check made it 11.5 s for 3.3 MiB); a repeated key is the last, as in JSON', () => {
    const lines = ['openapi: 3.1.0', 'paths:'];
    for (let i = 0; i < 40_000; i++) lines.push(`  /p${i}:`, '    get:', `      operationId: op${i}`, `      summary: Operation number ${i}`);
    const started = performance.now();
    const doc = parseDocument(lines.join('\n'), 'big.yaml');
    const ms = performance.now() - started;
    assert.equal(Object.keys(doc.paths!).length, 40_000);
    // About 1.5 s alone; generous for a loaded machine, still below the 11.5 s of the check.
    assert.ok(ms < 10_000, `${Math.round(ms)} ms`);
    // The check is off (it refused this document: "Map keys must be unique").
    assert.deepEqual(parseDocument('openapi: 3.0.3\npaths:\n  /x: {a: 1}\n  /x: {b: 2}\n', 'a.yaml').paths, { '/x': { b: 2 } });
    assert.deepEqual(parseDocument('{"openapi":"3.0.3","paths":{"/x":{"a":1},"/x":{"b":2}}}', 'a.json').paths, { '/x': { b: 2 } });
  });

  it('YAML is parsed as the config loader parses it, js-yaml first (ADR 0175: `yaml` alone held the event loop 19 s for 32 MiB); aliases still take the bounded parse', () => {
    const lines = ['openapi: 3.1.0', 'paths:'];
    for (let i = 0; i < 4_000; i++) {
      lines.push(`  /items${i}/{id}:`, '    get:', `      operationId: get${i}`, '      parameters:', '        - {name: id, in: path, required: true, schema: {type: string}}', "      responses: {'200': {description: ok}}");
    }
    // About a tenth; it was the same parse.
    assertFastParse(lines.join('\n'));
    // Same values as the `yaml` parse (1.2 core schema: dates and `0o17` as YAML 1.2 reads them).
    const scalars = 'openapi: 3.0.3\nx: {d: 2024-01-01, o: 0o17, h: 0x1F, n: ~, b: yes, i: .inf}\n';
    assert.deepEqual(parseDocument(scalars, 'a.yaml'), withYamlParser(({ parse }) => parse(scalars)));
    // An alias bomb still meets the bounded parse.
    const bomb = ['openapi: 3.0.3', 'a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 0; i < 8; i++) bomb.push(`${'b'.repeat(i + 1)}: &${'b'.repeat(i + 1)} [${Array(10).fill(`*${i === 0 ? 'a' : 'b'.repeat(i)}`).join(', ')}]`);
    assert.throws(() => parseDocument(bomb.join('\n'), 'bomb.yaml'), /neither valid JSON nor valid YAML: .*[Aa]lias/);
  });

  it('text with `${`, `*word`, `&word` or `!` in its descriptions takes the fast parse too (a document is data: nothing is expanded); an alias or a tag still takes the bounded one (ADR 0182)', () => {
    const lines = ['openapi: 3.1.0', 'paths:'];
    for (let i = 0; i < 4_000; i++) {
      lines.push(`  /items${i}/{id}:`, '    get:', `      operationId: get${i}`, `      description: Returns the *current* item for \${id} &more, or 404 !important`, "      responses: {'200': {description: ok}}");
    }
    const expected = assertFastParse(lines.join('\n'));
    assert.equal((expected.paths!['/items0/{id}'] as { get: { description: string } }).get.description, 'Returns the *current* item for ${id} &more, or 404 !important');
    // Anchors and aliases, tags, merge keys: the same values as the bounded parse gives.
    for (const yaml of ['openapi: 3.0.3\na: &x {k: 1}\nb: *x\n', 'openapi: 3.0.3\na: !!str 12\n', 'openapi: 3.0.3\na: {k: 1}\nb: {<<: {m: 2}, k: 3}\n']) {
      assert.deepEqual(parseDocument(yaml, 'a.yaml'), withYamlParser(({ parse }) => parse(yaml, { uniqueKeys: false, maxAliasCount: 1000 })), yaml);
    }
  });

  it('refuses broken text, Swagger 2.0 and non-OpenAPI documents with the label in the message', () => {
    assert.throws(() => parseDocument('{"openapi": ', '`a.json`'), /^Error: the OpenAPI document `a.json` is not valid JSON: /);
    // The text is never quoted (a file named by mistake may hold a secret).
    assert.throws(() => parseDocument('{"a": secret-value-here}', '`a.json`'), (err: Error) => !err.message.includes('secret') && /is not valid JSON: Unexpected token/.test(err.message));
    assert.throws(() => parseDocument('a: [1, 2\nb: }', '`a.yaml`'), /the OpenAPI document `a.yaml` is neither valid JSON nor valid YAML/);
    assert.throws(() => parseDocument('swagger: "2.0"\n', '`old.yaml`'), /the document `old.yaml` is Swagger 2.0; only OpenAPI 3.0 and 3.1 are supported/);
    assert.throws(() => parseDocument('hello: world\n', '`x.yaml`'), /is not an OpenAPI 3.x document \(its `openapi` field is missing\)/);
    assert.throws(() => parseDocument('- 1\n', '`x.yaml`'), /is not an object/);
    assert.throws(() => parseDocument('{"openapi":"3.0.0","paths":[]}', '`x`'), /`paths` that is not an object/);
  });

  it('readDocumentFile resolves against the working directory and names the file when it cannot', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'openapi-doc-'));
    writeFileSync(join(dir, 'api.yaml'), 'openapi: 3.0.0\n');
    try {
      assert.equal(await readDocumentFile('api.yaml', dir), 'openapi: 3.0.0\n');
      await assert.rejects(readDocumentFile('missing.yaml', dir), { message: `cannot read the OpenAPI document \`missing.yaml\` (${join(dir, 'missing.yaml')}): no such file` });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('serverBasePath', () => {
  it('a relative server URL is relative to where the document was fetched from (OpenAPI: `v1` beside /specs/api.json is /specs/v1)', () => {
    const at = 'https://api.example.com/specs/api.json?key=k';
    assert.deepEqual(serverBasePath(doc({ servers: [{ url: 'v1' }] }), at), { path: '/specs/v1', count: 1 });
    assert.deepEqual(serverBasePath(doc({ servers: [{ url: './v1/' }] }), at), { path: '/specs/v1', count: 1 });
    assert.deepEqual(serverBasePath(doc({ servers: [{ url: '/v1' }] }), at), { path: '/v1', count: 1 });
    assert.deepEqual(serverBasePath(doc({ servers: [{ url: 'https://other.example/v2' }] }), at), { path: '/v2', count: 1 });
    // A file has no URL: relative to the root.
    assert.deepEqual(serverBasePath(doc({ servers: [{ url: 'v1' }] })), { path: '/v1', count: 1 });
  });

  it('takes the path of the first server URL, absolute or relative, with variable defaults', () => {
    assert.deepEqual(serverBasePath(doc({ servers: [{ url: 'http://petstore.swagger.io/v2' }] })), { path: '/v2', count: 1 });
    assert.deepEqual(serverBasePath(doc({ servers: [{ url: '/api/' }] })), { path: '/api', count: 1 });
    assert.deepEqual(serverBasePath(doc({ servers: [{ url: 'https://x.example.com' }] })), { path: '', count: 1 });
    assert.deepEqual(serverBasePath(doc({})), { path: '', count: 0 });
    assert.deepEqual(
      serverBasePath(doc({ servers: [{ url: 'https://{name}.example.com:{port}/{basePath}', variables: { name: { default: 'demo' }, port: { default: '443' }, basePath: { default: 'v2' } } }, { url: '/other' }] })),
      { path: '/v2', count: 2 },
    );
  });
});

describe('RefResolver', () => {
  const resolver = new RefResolver(
    doc({
      components: {
        schemas: {
          'a/b': { type: 'string' },
          Nullable: { type: 'string', nullable: true, enum: ['x'], 'x-internal': true, xml: { name: 'n' } },
          Bounded: { type: 'integer', minimum: 1, exclusiveMinimum: true, maximum: 9, exclusiveMaximum: false, example: 3 },
        },
        parameters: { p: { $ref: '#/components/parameters/q', description: 'outer' }, q: { name: 'q', in: 'query', description: 'inner' } },
      },
    }),
  );

  it('looks up JSON pointers with ~1 escapes and refuses external ones', () => {
    assert.deepEqual(resolver.lookup('#/components/schemas/a~1b'), { type: 'string' });
    assert.throws(() => resolver.lookup('https://x/y.json#/a'), /points outside the document/);
    assert.throws(() => resolver.lookup('#/components/schemas/none'), /points at nothing/);
  });

  it('deref follows chains, sibling keys overriding', () => {
    assert.deepEqual(resolver.deref({ $ref: '#/components/parameters/p' }), { name: 'q', in: 'query', description: 'outer' });
  });

  it('maps the 3.0 dialect: nullable, boolean exclusive bounds, example; drops xml and x- keys', () => {
    assert.deepEqual(resolver.inline({ $ref: '#/components/schemas/Nullable' }), { type: ['string', 'null'], enum: ['x', null] });
    assert.deepEqual(resolver.inline({ $ref: '#/components/schemas/Bounded' }), { type: 'integer', exclusiveMinimum: 1, maximum: 9, examples: [3] });
  });

  it('3.0 `nullable` without a single `type` still lets null through (the `allOf: [$ref]` idiom refused null)', () => {
    const ref = { $ref: '#/components/schemas/a~1b' };
    assert.deepEqual(resolver.inline({ nullable: true, allOf: [ref], description: 'd' }), { anyOf: [{ allOf: [{ type: 'string' }] }, { type: 'null' }], description: 'd' });
    assert.deepEqual(resolver.inline({ nullable: true, oneOf: [ref, { type: 'integer' }] }), { anyOf: [{ oneOf: [{ type: 'string' }, { type: 'integer' }] }, { type: 'null' }] });
    assert.deepEqual(resolver.inline({ type: ['string', 'integer'], nullable: true }), { type: ['string', 'integer', 'null'] });
    // `nullable: false`, and a schema that already takes null, are left as they are.
    assert.deepEqual(resolver.inline({ nullable: false, allOf: [ref] }), { allOf: [{ type: 'string' }] });
    assert.deepEqual(resolver.inline({ type: ['string', 'null'], nullable: true }), { type: ['string', 'null'] });
  });

  it('keeps $ref siblings (3.1) over the referenced schema', () => {
    assert.deepEqual(resolver.inline({ $ref: '#/components/schemas/a~1b', description: 'why' }), { type: 'string', description: 'why' });
  });

  it('does not walk into enum, default or examples values', () => {
    const value = { type: 'object', default: { $ref: 'not a ref' }, enum: [{ $ref: 'x' }] };
    assert.deepEqual(resolver.inline(value), value);
  });
});

describe('parseConnection (the form shared with the sse and mcp transports)', () => {
  it('host, host:port and URL forms; the base path only when given', () => {
    assert.deepEqual(parseConnection({ host: '127.0.0.1', port: 8090 }, false), { secure: false, origin: 'http://127.0.0.1:8090', basePath: undefined });
    assert.deepEqual(parseConnection({ host: 'api.example.com:8443' }, true), { secure: true, origin: 'https://api.example.com:8443', basePath: undefined });
    assert.deepEqual(parseConnection({ host: 'https://api.example.com/v2/' }, false), { secure: true, origin: 'https://api.example.com:443', basePath: '/v2' });
    assert.deepEqual(parseConnection({ host: 'http://127.0.0.1:9000' }, false), { secure: false, origin: 'http://127.0.0.1:9000', basePath: undefined });
    assert.deepEqual(parseConnection({ host: '[::1]:9000', path: '/' }, false), { secure: false, origin: 'http://[::1]:9000', basePath: '' });
    assert.deepEqual(parseConnection({ host: 'svc', path: 'api' }, false), { secure: false, origin: 'http://svc:80', basePath: '/api' });
  });

  it('a port or a base path given twice, or malformed values, are problems at the field', () => {
    assert.deepEqual(parseConnection({ host: 'h:1', port: 2 }, false), { field: 'port', message: 'the port is given twice (in `host` and in `port`)' });
    assert.deepEqual(parseConnection({ host: 'http://h/v1', path: '/v2' }, false), { field: 'path', message: 'when `host` is a URL, give the path inside it, not in `path`' });
    assert.deepEqual(parseConnection({ host: 'http://h/v1?x=1' }, false), { field: 'host', message: 'the base path takes no query or fragment' });
    assert.equal((parseConnection({ host: 'ftp://h' }, false) as { field: string }).field, 'host');
    assert.equal((parseConnection({ host: 'h/v2' }, false) as { field: string }).field, 'host');
    assert.equal((parseConnection({ host: 'h:99999' }, false) as { field: string }).field, 'port');
    assert.equal((parseConnection({ host: '::1' }, false) as { field: string }).field, 'host');
  });
});

// A tool call → an HTTP request; an HTTP answer → a tools/call result.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { buildRequest, encodeStrict, errorResult, toToolResult } from './call.ts';
import type { BuiltRequest } from './call.ts';
import type { OperationPlan, ParameterPlan } from './tools.ts';

const param = (name: string, extra: Partial<ParameterPlan> = {}): ParameterPlan => ({ name, required: false, style: 'form', explode: true, ...extra });
const op = (extra: Partial<OperationPlan>): OperationPlan => ({ method: 'GET', pathTemplate: '/', path: [], query: [], header: [], cookie: [], body: undefined, accept: 'application/json', ...extra });
const built = (value: BuiltRequest | string): BuiltRequest => {
  assert.equal(typeof value, 'object', `expected a request, got: ${String(value)}`);
  return value as BuiltRequest;
};

describe('buildRequest', () => {
  it('fills the path template under the base path, percent-encoding all but unreserved characters', () => {
    const plan = op({ pathTemplate: '/pet/{petId}/files/{name}', path: [param('petId', { required: true, style: 'simple', explode: false }), param('name', { required: true, style: 'simple', explode: false })] });
    const req = built(buildRequest(plan, '/v2', { path: { petId: 1, name: "a b/c?d#e%f~g.h_i-j!'()*ü" } }));
    assert.equal(req.method, 'GET');
    assert.equal(req.path, "/v2/pet/1/files/a%20b%2Fc%3Fd%23e%25f~g.h_i-j%21%27%28%29%2A%C3%BC");
    assert.equal(req.body, undefined);
    assert.equal(req.headers.accept, 'application/json');
    assert.equal(encodeStrict('~-._'), '~-._');
  });

  it('an argument the input schema does not list, or a group that is not an object, is refused (it was dropped, the model believing it sent)', () => {
    const plan = op({ method: 'POST', pathTemplate: '/pet/{petId}', path: [param('petId', { required: true, style: 'simple' })], body: { mediaType: 'application/json', encoding: 'json', required: false } });
    assert.equal(buildRequest(plan, '', { petId: 1 }), 'unknown argument `petId`: this tool takes `path`, `body` (a parameter goes in its group: arguments.path.petId)');
    assert.equal(buildRequest(plan, '', { path: { petId: 1 }, limit: 5 }), 'unknown argument `limit`: this tool takes `path`, `body`');
    assert.equal(buildRequest(op({}), '', { body: {} }), 'unknown argument `body`: this tool takes no arguments');
    assert.equal(buildRequest(plan, '', { path: 'petId=1' }), 'argument `path` must be an object');
    // A `query` argument may carry keys the document does not declare (sent as they are), even on a tool that declares
    // none; an empty object for a group the tool does not have says nothing, and is let through.
    assert.equal(built(buildRequest(plan, '', { path: { petId: 1 }, query: { a: 1 } })).path, '/pet/1?a=1');
    assert.equal(built(buildRequest(plan, '', { path: { petId: 1 }, header: {}, cookie: {} })).path, '/pet/1');
    assert.equal(built(buildRequest(plan, '', { path: { petId: 1 }, body: { a: 1 } })).body, '{"a":1}');
  });

  it('a parameter named like an Object method (`constructor`, `toString`) left out is missing, not the method\'s source text', () => {
    const plan = op({ pathTemplate: '/a/{constructor}', path: [param('constructor', { required: true, style: 'simple' })], query: [param('toString', { required: true })], cookie: [param('valueOf')] });
    assert.equal(buildRequest(plan, '', {}), 'missing path parameter `constructor` (pass it as arguments.path.constructor)');
    assert.equal(buildRequest(plan, '', { path: { constructor: 'c' } }), 'missing query parameter `toString` (pass it as arguments.query.toString)');
    const req = built(buildRequest(plan, '', { path: { constructor: 'c' }, query: { toString: 't' } }));
    assert.equal(req.path, '/a/c?toString=t');
    assert.equal(req.headers.cookie, undefined);
  });

  it('a missing path parameter is an argument problem, not a request', () => {
    const plan = op({ pathTemplate: '/pet/{petId}', path: [param('petId', { required: true, style: 'simple' })] });
    assert.equal(buildRequest(plan, '', {}), 'missing path parameter `petId` (pass it as arguments.path.petId)');
    assert.equal(buildRequest(plan, '', { path: { petId: '' } }), 'missing path parameter `petId` (pass it as arguments.path.petId)');
  });

  it('a path parameter that is a dot segment is refused: `..` would leave the operation\'s path for another endpoint', () => {
    const plan = op({ pathTemplate: '/users/{id}/profile', path: [param('id', { required: true, style: 'simple' })] });
    for (const id of ['..', '.']) {
      assert.equal(buildRequest(plan, '/api', { path: { id } }), `path parameter \`id\` may not be \`${id}\` (a dot segment would call another path of the API)`);
    }
    // Dots inside a value are text: percent-encoding leaves them, and they name no other path.
    assert.equal(built(buildRequest(plan, '/api', { path: { id: 'a..b' } })).path, '/api/users/a..b/profile');
    assert.equal(built(buildRequest(plan, '/api', { path: { id: '...' } })).path, '/api/users/.../profile');
    // Part of a segment, dots name no other path.
    const file = op({ pathTemplate: '/files/{name}.json', path: [param('name', { required: true, style: 'simple' })] });
    assert.equal(built(buildRequest(file, '', { path: { name: '..' } })).path, '/files/...json');
    // An encoded dot segment is sent encoded twice (`%252E%252E`): text, not a segment.
    assert.equal(built(buildRequest(plan, '/api', { path: { id: '%2E%2E' } })).path, '/api/users/%252E%252E/profile');
  });

  it('path styles: `label` (`.x`) and `matrix` (`;id=x`), arrays and objects exploded or not (OpenAPI 3.1 style values)', () => {
    const path = (style: string, explode: boolean, value: unknown): string => {
      const plan = op({ pathTemplate: '/r/{id}', path: [param('id', { required: true, style, explode })] });
      return built(buildRequest(plan, '', { path: { id: value } })).path;
    };
    assert.equal(path('label', false, 'a b'), '/r/.a%20b');
    assert.equal(path('label', false, ['x', 'y']), '/r/.x,y');
    assert.equal(path('label', true, ['x', 'y']), '/r/.x.y');
    assert.equal(path('label', false, { R: 100, G: 200 }), '/r/.R,100,G,200');
    assert.equal(path('label', true, { R: 100, G: 200 }), '/r/.R=100.G=200');
    assert.equal(path('matrix', false, 5), '/r/;id=5');
    assert.equal(path('matrix', false, ['x', 'y']), '/r/;id=x,y');
    assert.equal(path('matrix', true, ['x', 'y']), '/r/;id=x;id=y');
    assert.equal(path('matrix', false, { R: 100, G: 200 }), '/r/;id=R,100,G,200');
    assert.equal(path('matrix', true, { R: 100, G: 200 }), '/r/;R=100;G=200');
    assert.equal(path('simple', true, { R: 100, G: 200 }), '/r/R=100,G=200');
  });

  it('a dot segment made of two adjacent path parameters, or a value that fills nothing, is refused', () => {
    const plan = op({ pathTemplate: '/x/{a}{b}/y', path: [param('a', { required: true, style: 'simple' }), param('b', { required: true, style: 'simple' })] });
    assert.equal(buildRequest(plan, '', { path: { a: '.', b: '.' } }), 'path parameters may not make the segment `..` (a dot segment would call another path of the API)');
    assert.equal(built(buildRequest(plan, '', { path: { a: '.', b: 'b' } })).path, '/x/.b/y');
    const one = op({ pathTemplate: '/pet/{id}', path: [param('id', { required: true, style: 'simple' })] });
    // `/pet/` is another endpoint of the API than `/pet/{id}`.
    for (const id of [[], {}]) assert.equal(buildRequest(one, '', { path: { id } }), 'missing path parameter `id` (pass it as arguments.path.id)');
  });

  it('query: arrays as repeated keys, joined when not exploded, null as a bare key, deepObject, undeclared keys kept', () => {
    const plan = op({
      pathTemplate: '/pet/findByStatus',
      query: [param('status', { required: true }), param('tags', { explode: false }), param('filter', { style: 'deepObject' }), param('flag')],
    });
    const req = built(buildRequest(plan, '/v2', { query: { status: ['available', 'pending'], tags: ['a,b', 'c'], filter: { name: 'x y' }, flag: null, extra: 3 } }));
    assert.equal(req.path, '/v2/pet/findByStatus?status=available&status=pending&tags=a%2Cb,c&filter%5Bname%5D=x%20y&flag&extra=3');
    assert.equal(buildRequest(plan, '', { query: {} }), 'missing query parameter `status` (pass it as arguments.query.status)');
  });

  it('objects in `spaceDelimited` and `pipeDelimited` query style are joined by their delimiter (they were joined by commas)', () => {
    const plan = op({ query: [param('s', { style: 'spaceDelimited', explode: false }), param('p', { style: 'pipeDelimited', explode: false })] });
    assert.equal(built(buildRequest(plan, '', { query: { s: { R: 100, G: 200 }, p: { R: 100, G: 200 } } })).path, '/?s=R%20100%20G%20200&p=R|100|G|200');
  });

  it('a parameter described by `content` is sent as JSON', () => {
    const plan = op({ query: [param('filter', { style: 'json' })], header: [param('X-Filter', { style: 'json' })] });
    const req = built(buildRequest(plan, '', { query: { filter: { a: [1] } }, header: { 'X-Filter': { b: 'c' } } }));
    assert.equal(req.path, '/?filter=%7B%22a%22%3A%5B1%5D%7D');
    assert.equal(req.headers['x-filter'], '{"b":"c"}');
  });

  it('headers: client headers without framing or MCP ones, then declared header parameters (case-insensitive) over them', () => {
    const plan = op({ method: 'DELETE', pathTemplate: '/pet/{petId}', path: [param('petId', { required: true, style: 'simple' })], header: [param('api_key', { style: 'simple', explode: false })] });
    const req = built(
      buildRequest(plan, '', { path: { petId: 7 }, header: { API_KEY: 'secret', undeclared: 'no' } }, {
        authorization: 'Bearer t',
        'mcp-session-id': 's',
        'Content-Length': '12',
        host: 'gateway',
        api_key: 'from-client',
        'x-custom': 'kept',
      }),
    );
    assert.deepEqual(req.headers, { authorization: 'Bearer t', api_key: 'secret', 'x-custom': 'kept', accept: 'application/json' });
    assert.equal(req.method, 'DELETE');
  });

  it('cookie parameters: one `Cookie` header, values percent-encoded, after the client\'s cookies; a required one must be given', () => {
    const plan = op({ cookie: [param('session', { required: true }), param('ids', { explode: false }), param('tags'), param('prefs')] });
    const req = built(buildRequest(plan, '', { cookie: { session: 'a b;c=d', ids: [1, 2], tags: ['x', 'y'], prefs: { k: 'v' }, undeclared: 'no' } }, { cookie: 'theirs=1' }));
    assert.equal(req.headers.cookie, 'theirs=1; session=a%20b%3Bc%3Dd; ids=1,2; tags=x; tags=y; k=v');
    assert.equal(built(buildRequest(plan, '', { cookie: { session: 's' } })).headers.cookie, 'session=s');
    assert.equal(buildRequest(plan, '', { cookie: {} }), 'missing cookie parameter `session` (pass it as arguments.cookie.session)');
  });

  it('a header parameter value a header cannot carry is an argument problem naming it (undici refused it: "UND_ERR_INVALID_ARG")', () => {
    const plan = op({ header: [param('X-Thing', { style: 'simple', explode: false })] });
    for (const value of ['snow \u2603', 'nul \u0000']) {
      assert.equal(buildRequest(plan, '', { header: { 'X-Thing': value } }), 'header parameter `X-Thing` has characters a header cannot carry (controls, or past U+00FF)');
    }
    // Line breaks become spaces; Latin-1 is sent as it is.
    assert.equal(built(buildRequest(plan, '', { header: { 'X-Thing': 'caf\u00e9\r\nx' } })).headers['x-thing'], 'caf\u00e9 x');
  });

  it('a required header parameter must be given', () => {
    const plan = op({ header: [param('X-Tenant', { required: true, style: 'simple' })] });
    assert.equal(buildRequest(plan, '', {}), 'missing header parameter `X-Tenant` (pass it as arguments.header.X-Tenant)');
  });

  it('body: JSON with its media type; a required body must be given; an optional one may be left out', () => {
    const plan = op({ method: 'POST', pathTemplate: '/pet', body: { mediaType: 'application/json', encoding: 'json', required: true } });
    const req = built(buildRequest(plan, '/v2', { body: { name: 'rex', photoUrls: [] } }));
    assert.equal(req.body, '{"name":"rex","photoUrls":[]}');
    assert.equal(req.headers['content-type'], 'application/json');
    assert.equal(buildRequest(plan, '', {}), 'missing request body (pass it as arguments.body)');
    const optional = op({ method: 'POST', body: { mediaType: 'application/json', encoding: 'json', required: false } });
    assert.equal(built(buildRequest(optional, '', {})).body, undefined);
  });

  it('body: form fields, base64 bytes, text and multipart parts', () => {
    const form = built(buildRequest(op({ method: 'POST', body: { mediaType: 'application/x-www-form-urlencoded', encoding: 'form', required: false } }), '', { body: { name: 'a b', tag: ['x', 'y'] } }));
    assert.equal(form.body, 'name=a+b&tag=x&tag=y');
    const binary = built(buildRequest(op({ method: 'PUT', body: { mediaType: 'application/octet-stream', encoding: 'binary', required: true } }), '', { body: Buffer.from('hello').toString('base64') }));
    assert.deepEqual(binary.body, Buffer.from('hello'));
    assert.equal(binary.headers['content-type'], 'application/octet-stream');
    const text = built(buildRequest(op({ method: 'PUT', body: { mediaType: 'text/plain', encoding: 'text', required: true } }), '', { body: 'plain' }));
    assert.equal(text.body, 'plain');
    const multipart = built(
      buildRequest(op({ method: 'POST', body: { mediaType: 'multipart/form-data', encoding: 'multipart', required: false, fileFields: ['file'] } }), '', {
        body: { note: 'hi', file: Buffer.from([0, 1, 2]).toString('base64') },
      }),
    );
    const boundary = /boundary=(.+)$/.exec(multipart.headers['content-type']!)![1]!;
    const raw = (multipart.body as Buffer).toString('latin1');
    assert.equal(
      raw,
      `--${boundary}\r\nContent-Disposition: form-data; name="note"\r\n\r\nhi\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="file"\r\nContent-Type: application/octet-stream\r\n\r\n\u0000\u0001\u0002\r\n` +
        `--${boundary}--\r\n`,
    );
    // A file field's declared type is its part's (APIs that check an upload's type refused octet-stream).
    const typed = built(
      buildRequest(op({ method: 'POST', body: { mediaType: 'multipart/form-data', encoding: 'multipart', required: false, fileFields: ['photo'], fileTypes: { photo: 'image/png' } } }), '', {
        body: { photo: Buffer.from([1]).toString('base64') },
      }),
    );
    assert.match((typed.body as Buffer).toString('latin1'), /name="photo"; filename="photo"\r\nContent-Type: image\/png\r\n/);
  });
});

describe('toToolResult', () => {
  const CALLED = 'http://127.0.0.1:8080/v2/pet/1';
  const valid = (r: ReturnType<typeof toToolResult>): void => void CallToolResultSchema.parse(r);

  it('a JSON object: structuredContent plus the same JSON as text', () => {
    const r = toToolResult({ status: 200, contentType: 'application/json', body: Buffer.from('{"id":1,"name":"doggie"}'), url: CALLED });
    valid(r);
    assert.deepEqual(r, { content: [{ type: 'text', text: '{"id":1,"name":"doggie"}' }], structuredContent: { id: 1, name: 'doggie' } });
  });

  it('JSON arrays and scalars are wrapped as {data}; JSON null is text only', () => {
    assert.deepEqual(toToolResult({ status: 200, contentType: 'application/json', body: Buffer.from('[1,2]'), url: CALLED }).structuredContent, { data: [1, 2] });
    assert.deepEqual(toToolResult({ status: 200, contentType: 'application/json', body: Buffer.from('"ok"'), url: CALLED }).structuredContent, { data: 'ok' });
    assert.deepEqual(toToolResult({ status: 200, contentType: 'application/json', body: Buffer.from('null'), url: CALLED }), { content: [{ type: 'text', text: 'null' }] });
  });

  it('non-JSON or empty 2xx: {code, message}', () => {
    const r = toToolResult({ status: 200, contentType: 'text/plain', body: Buffer.from('logged out'), url: CALLED });
    valid(r);
    assert.deepEqual(r.structuredContent, { code: 200, message: 'logged out' });
    assert.deepEqual(toToolResult({ status: 204, contentType: undefined, body: Buffer.from(''), url: CALLED }).structuredContent, { code: 204, message: '' });
  });

  it('non-2xx: an isError result with the status and the body', () => {
    const r = toToolResult({ status: 404, contentType: 'application/json', body: Buffer.from('{"message":"Pet not found"}'), url: CALLED });
    valid(r);
    assert.equal(r.isError, true);
    assert.deepEqual(r.content, [{ type: 'text', text: 'HTTP 404: {"message":"Pet not found"}' }]);
    assert.deepEqual(r.structuredContent, { status: 404, body: { message: 'Pet not found' } });
    assert.deepEqual(toToolResult({ status: 503, contentType: 'text/plain', body: Buffer.from('down'), url: CALLED }).structuredContent, { status: 503, body: 'down' });
    assert.deepEqual(errorResult('boom'), { isError: true, content: [{ type: 'text', text: 'boom' }] });
  });

  it('an image or audio answer is an image / audio block of its bytes; another binary type an embedded resource (it was mangled as UTF-8 text)', () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0xff, 0x00]);
    const image = toToolResult({ status: 200, contentType: 'image/png', body: png, url: CALLED });
    valid(image);
    assert.deepEqual(image, { content: [{ type: 'image', data: png.toString('base64'), mimeType: 'image/png' }] });
    assert.deepEqual(toToolResult({ status: 200, contentType: 'audio/mpeg', body: png, url: CALLED }).content, [{ type: 'audio', data: png.toString('base64'), mimeType: 'audio/mpeg' }]);
    const pdf = toToolResult({ status: 200, contentType: 'application/pdf', body: png, url: CALLED });
    valid(pdf);
    assert.deepEqual(pdf, { content: [{ type: 'resource', resource: { uri: CALLED, mimeType: 'application/pdf', blob: png.toString('base64') } }] });
    // Text by type, suffix or charset; SVG is XML.
    for (const type of ['text/csv', 'application/problem+json', 'image/svg+xml', 'application/octet-stream; charset=utf-8', 'application/x-yaml']) {
      assert.deepEqual(toToolResult({ status: 200, contentType: type, body: Buffer.from('a'), url: CALLED }).structuredContent, { code: 200, message: 'a' }, type);
    }
    // An empty binary answer and an error with a binary type stay text.
    assert.deepEqual(toToolResult({ status: 204, contentType: 'image/png', body: Buffer.alloc(0), url: CALLED }).structuredContent, { code: 204, message: '' });
    assert.equal(toToolResult({ status: 500, contentType: 'application/octet-stream', body: Buffer.from('boom'), url: CALLED }).isError, true);
  });
});

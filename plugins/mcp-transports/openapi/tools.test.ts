// OpenAPI operations → MCP tools, on the real Petstore document and the other @readme/oas-examples documents.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { ToolSchema } from '@modelcontextprotocol/sdk/types.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { buildRequest } from './call.ts';
import { parseDocument } from './document.ts';
import type { OpenApiDocument } from './document.ts';
import { MAX_DOCUMENT_NODES, MAX_OPERATION_NODES } from './refs.ts';
import { convertDocument, derivedToolName, toolName } from './tools.ts';
import type { OpenApiTool } from './tools.ts';

const EXAMPLES = dirname(createRequire(import.meta.url).resolve('@readme/oas-examples/3.0/json/petstore.json')).replace(/\/3\.0\/json$/, '');
const load = (rel: string): OpenApiDocument => parseDocument(readFileSync(join(EXAMPLES, rel), 'utf8'), rel);
const byName = (tools: readonly OpenApiTool[], name: string): OpenApiTool => {
  const tool = tools.find((t) => t.tool.name === name);
  assert.ok(tool, `no tool ${name} among ${tools.map((t) => t.tool.name).join(', ')}`);
  return tool;
};
const PETSTORE_TOOLS = [
  'addPet', 'updatePet', 'findPetsByStatus', 'findPetsByTags', 'getPetById', 'updatePetWithForm', 'deletePet', 'uploadFile',
  'getInventory', 'placeOrder', 'getOrderById', 'deleteOrder', 'createUser', 'createUsersWithArrayInput', 'createUsersWithListInput',
  'loginUser', 'logoutUser', 'getUserByName', 'updateUser', 'deleteUser',
];

describe('Petstore (OpenAPI 3.0) as tools', () => {
  const { tools, warnings } = convertDocument(load('3.0/json/petstore.json'));

  it('makes one tool per operation, named by operationId, in document order', () => {
    assert.deepEqual(tools.map((t) => t.tool.name), PETSTORE_TOOLS);
    assert.deepEqual(warnings, []);
  });

  it('every tool is a valid MCP Tool with a compilable input schema', () => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    for (const { tool } of tools) {
      ToolSchema.parse(tool);
      ajv.compile(tool.inputSchema);
    }
  });

  it('getPetById: the path parameter with its schema and description; summary as title', () => {
    const { tool, operation } = byName(tools, 'getPetById');
    assert.equal(tool.title, 'Find pet by ID');
    assert.equal(tool.description, 'Returns a single pet');
    assert.deepEqual(tool.inputSchema, {
      type: 'object',
      properties: {
        path: {
          type: 'object',
          description: 'Path parameters.',
          properties: { petId: { type: 'integer', format: 'int64', description: 'ID of pet to return' } },
          required: ['petId'],
        },
      },
      required: ['path'],
    });
    assert.deepEqual(tool.annotations, { title: 'Find pet by ID', readOnlyHint: true, openWorldHint: true });
    assert.equal(operation.method, 'GET');
    assert.equal(operation.pathTemplate, '/pet/{petId}');
  });

  it('addPet: the JSON body of #/components/requestBodies/Pet with every $ref inlined', () => {
    const { tool, operation } = byName(tools, 'addPet');
    assert.deepEqual(tool.inputSchema.required, ['body']);
    const body = tool.inputSchema.properties!.body as Record<string, any>;
    assert.equal(JSON.stringify(body).includes('$ref'), false);
    assert.equal(body.type, 'object');
    assert.deepEqual(body.required, ['name', 'photoUrls']);
    assert.equal(body.description, 'Pet object that needs to be added to the store');
    assert.deepEqual(body.properties.category, { type: 'object', properties: { id: { type: 'integer', format: 'int64' }, name: { type: 'string' } } });
    assert.deepEqual(body.properties.tags.items, { type: 'object', properties: { id: { type: 'integer', format: 'int64' }, name: { type: 'string' } } });
    assert.deepEqual(body.properties.status.enum, ['available', 'pending', 'sold']);
    // OpenAPI `example` becomes JSON Schema `examples`; `xml` is dropped.
    assert.deepEqual(body.properties.name, { type: 'string', examples: ['doggie'] });
    assert.deepEqual(operation.body, { mediaType: 'application/json', encoding: 'json', required: true });
  });

  it('findPetsByStatus: a required query array (explode form)', () => {
    const { tool, operation } = byName(tools, 'findPetsByStatus');
    const query = tool.inputSchema.properties!.query as Record<string, any>;
    assert.deepEqual(query.required, ['status']);
    assert.equal(query.properties.status.type, 'array');
    assert.deepEqual(query.properties.status.items.enum, ['available', 'pending', 'sold']);
    assert.deepEqual(operation.query, [{ name: 'status', required: true, style: 'form', explode: true }]);
  });

  it('deletePet: an optional declared header next to the path parameter; DELETE annotations', () => {
    const { tool, operation } = byName(tools, 'deletePet');
    assert.deepEqual(Object.keys(tool.inputSchema.properties!), ['path', 'header']);
    assert.deepEqual(tool.inputSchema.required, ['path']);
    assert.deepEqual((tool.inputSchema.properties!.header as Record<string, any>).properties, { api_key: { type: 'string' } });
    assert.deepEqual(operation.header, [{ name: 'api_key', required: false, style: 'simple', explode: false }]);
    assert.equal(tool.annotations?.destructiveHint, true);
    assert.equal(tool.annotations?.idempotentHint, true);
  });

  it('uploadFile: multipart file fields take base64; updatePetWithForm: form fields', () => {
    const upload = byName(tools, 'uploadFile');
    assert.deepEqual(upload.tool.inputSchema.properties!.body, {
      type: 'object',
      properties: {
        additionalMetadata: { description: 'Additional data to pass to server', type: 'string' },
        file: { description: 'file to upload', type: 'string', contentEncoding: 'base64' },
      },
    });
    assert.deepEqual(upload.operation.body, { mediaType: 'multipart/form-data', encoding: 'multipart', required: false, fileFields: ['file'] });
    const form = byName(tools, 'updatePetWithForm');
    assert.equal(form.operation.body?.encoding, 'form');
    assert.deepEqual(Object.keys((form.tool.inputSchema.properties!.body as Record<string, any>).properties), ['name', 'status']);
  });

  it('an application/octet-stream body is one base64 string', () => {
    const doc = parseDocument(
      JSON.stringify({
        openapi: '3.0.0',
        info: { title: 't', version: '1' },
        paths: { '/blob': { put: { operationId: 'putBlob', requestBody: { required: true, content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } }, responses: {} } } },
      }),
      'inline',
    );
    const { tool, operation } = convertDocument(doc).tools[0]!;
    assert.deepEqual(tool.inputSchema.properties!.body, { type: 'string', contentEncoding: 'base64', description: 'The request body, base64-encoded.' });
    assert.deepEqual(tool.inputSchema.required, ['body']);
    assert.deepEqual(operation.body, { mediaType: 'application/octet-stream', encoding: 'binary', required: true });
  });

  it('getInventory: no parameters gives an empty object schema', () => {
    assert.deepEqual(byName(tools, 'getInventory').tool.inputSchema, { type: 'object', properties: {} });
  });

  it('the YAML and OpenAPI 3.1 Petstore documents give the same tool names', () => {
    assert.deepEqual(convertDocument(load('3.0/yaml/petstore.yaml')).tools.map((t) => t.tool.name), PETSTORE_TOOLS);
    const v31 = convertDocument(load('3.1/json/petstore.json')).tools;
    assert.deepEqual(v31.map((t) => t.tool.name), PETSTORE_TOOLS);
    assert.equal(JSON.stringify(v31.map((t) => t.tool.inputSchema)).includes('$ref'), false);
  });
});

describe('tool names without operationId', () => {
  it('derives stable names from method and path, and merges path-item parameters', () => {
    const first = convertDocument(load('3.0/json/petstore-simple.json')).tools;
    const second = convertDocument(load('3.0/json/petstore-simple.json')).tools;
    assert.deepEqual(first.map((t) => t.tool.name), ['put_pet_id', 'get_pet_id']);
    assert.deepEqual(second.map((t) => t.tool.name), first.map((t) => t.tool.name));
    // `id` is declared on the path item, not the operation.
    const get = byName(first, 'get_pet_id');
    assert.deepEqual((get.tool.inputSchema.properties!.path as Record<string, any>).properties, { id: { type: 'integer' } });
    assert.equal(get.tool.description, 'This operation will find a pet in the database.');
    assert.equal(get.tool.title, 'Find a pet');
  });

  it('derivedToolName and toolName', () => {
    assert.equal(derivedToolName('GET', '/pet/{petId}'), 'get_pet_petId');
    assert.equal(derivedToolName('post', '/store/order'), 'post_store_order');
    assert.equal(derivedToolName('get', '/'), 'get_root');
    assert.equal(derivedToolName('get', '/a b/{c d}/x.json'), 'get_a_b_c_d_x_json');
    assert.equal(toolName('find pet by id'), 'find_pet_by_id');
    // What LLM APIs take as a function name (OpenAI, Anthropic: `^[a-zA-Z0-9_-]{1,64}$`): no dots, 64 at most.
    assert.equal(toolName('pets.list'), 'pets_list');
    assert.equal(toolName('x'.repeat(200)).length, 64);
  });

  it('every name, derived, cleaned or suffixed, is one an LLM API takes (`^[a-zA-Z0-9_-]{1,64}$`) and unique (a suffix made it 130 long)', () => {
    const long = 'a'.repeat(140);
    const paths = {
      '/a': { get: { operationId: long, responses: {} }, post: { operationId: long, responses: {} }, put: { operationId: `${long}b`, responses: {} } },
      '/b': { get: { operationId: 'drive.files.list', responses: {} }, post: { operationId: 'drive_files_list', responses: {} } },
      '/very/long/path/with/many/segments/that/make/a/derived/name/longer/than/sixty-four/characters.json': { get: { responses: {} } },
    };
    const { tools } = convertDocument(parseDocument(JSON.stringify({ openapi: '3.1.0', info: { title: 't', version: '1' }, paths }), 'inline'));
    const names = tools.map((t) => t.tool.name);
    assert.equal(names.length, 6);
    for (const name of names) assert.match(name, /^[a-zA-Z0-9_-]{1,64}$/);
    assert.equal(new Set(names).size, names.length);
    assert.deepEqual(names.slice(1, 5), [`${'a'.repeat(62)}_2`, `${'a'.repeat(62)}_3`, 'drive_files_list', 'drive_files_list_2']);
  });

  it('a taken name gets a numbered suffix in document order, with a warning', () => {
    const doc = parseDocument(
      JSON.stringify({
        openapi: '3.0.3',
        info: { title: 't', version: '1' },
        paths: {
          '/a': { get: { operationId: 'same', responses: {} } },
          '/b': { get: { operationId: 'same', responses: {} }, post: { responses: {} } },
          '/post_b': { get: { operationId: 'post_b', responses: {} } },
        },
      }),
      'inline',
    );
    const { tools, warnings } = convertDocument(doc);
    assert.deepEqual(tools.map((t) => t.tool.name), ['same', 'same_2', 'post_b', 'post_b_2']);
    assert.equal(warnings.length, 2);
  });
});

describe('parameters', () => {
  it('operation parameters override path-item ones (headers case-insensitively); cookie parameters are a `cookie` group (they were left out)', () => {
    const doc = parseDocument(
      JSON.stringify({
        openapi: '3.1.0',
        info: { title: 't', version: '1' },
        components: { parameters: { limit: { name: 'limit', in: 'query', schema: { type: 'integer' }, description: 'Page size.' } } },
        paths: {
          '/items/{id}': {
            parameters: [
              { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
              { name: 'X-Trace', in: 'header', schema: { type: 'string' }, description: 'item level' },
              { $ref: '#/components/parameters/limit' },
            ],
            get: {
              operationId: 'getItem',
              parameters: [
                { name: 'id', in: 'path', required: true, schema: { type: 'integer' } },
                { name: 'x-trace', in: 'header', required: true, schema: { type: 'string' }, description: 'operation level' },
                { name: 'session', in: 'cookie', schema: { type: 'string' } },
                { name: 'Accept', in: 'header', schema: { type: 'string' } },
              ],
              responses: {},
            },
          },
        },
      }),
      'inline',
    );
    const { tools, warnings } = convertDocument(doc);
    const { tool } = byName(tools, 'getItem');
    const props = tool.inputSchema.properties as Record<string, any>;
    assert.deepEqual(props.path.properties, { id: { type: 'integer' } });
    assert.deepEqual(props.header, { type: 'object', description: 'Header parameters.', properties: { 'x-trace': { type: 'string', description: 'operation level' } }, required: ['x-trace'] });
    assert.deepEqual(props.query.properties, { limit: { type: 'integer', description: 'Page size.' } });
    assert.equal(props.query.required, undefined);
    assert.deepEqual(props.cookie, { type: 'object', description: 'Cookie parameters.', properties: { session: { type: 'string' } } });
    assert.deepEqual(tool.inputSchema.required, ['path', 'header']);
    assert.deepEqual(warnings, []);
  });
});

describe('answers and bodies the document declares', () => {
  const components = {
    responses: { Img: { description: 'i', content: { 'image/png': {} } } },
    schemas: {
      Pet: {
        type: 'object',
        required: ['id', 'name'],
        properties: { id: { type: 'integer', readOnly: true }, name: { type: 'string' }, password: { type: 'string', writeOnly: true }, tags: { type: 'array', items: { $ref: '#/components/schemas/Tag' } } },
      },
      Tag: { type: 'object', required: ['tagId', 'label'], properties: { tagId: { readOnly: true, type: 'integer' }, label: { type: 'string' } } },
    },
  };
  const convert = (paths: Record<string, unknown>) => convertDocument(parseDocument(JSON.stringify({ openapi: '3.1.0', info: { title: 't', version: '1' }, components, paths }), 'inline'));

  it('`accept` names the 2xx media types, JSON first and preferred (an image-only API answered 406 to `application/json`)', () => {
    const { tools } = convert({
      '/img': { get: { operationId: 'img', responses: { '200': { $ref: '#/components/responses/Img' } } } },
      '/pet': { get: { operationId: 'pet', responses: { '200': { description: 'p', content: { 'application/xml': {}, 'application/json': {} } }, '404': { description: 'n', content: { 'text/html': {} } } } } },
      '/none': { get: { operationId: 'none', responses: { '204': { description: 'empty' } } } },
      '/junk': { get: { operationId: 'junk', responses: { '2XX': { description: 'j', content: { 'bad type\r\nx': {}, 'text/csv': {} } } } } },
    });
    assert.deepEqual(
      tools.map((t) => t.operation.accept),
      ['image/png', 'application/json, application/xml;q=0.9', 'application/json', 'text/csv'],
    );
  });

  it('a path item\'s or operation\'s own `servers` give that operation its base path (they were not read: calls went under the document\'s)', () => {
    const { tools } = convertDocument(load('3.0/json/server-path-level.json'));
    assert.deepEqual(
      Object.fromEntries(tools.map((t) => [t.operation.pathTemplate, t.operation.basePath])),
      {
        '/relative-path-server': '/v2',
        '/relative-operation-server': '/v3',
        '/operation-server-variables': '/v3',
        '/path-item-ref-server': '',
        '/path-item-server-source': '',
        // An empty list names no server: the next level's (here the document's) applies.
        '/empty-operation-servers': '',
        '/empty-path-item-servers': undefined,
      },
    );
  });

  it('a request body leaves out `readOnly` properties, also from `required` (a model was asked for the server\'s `id`)', () => {
    const { tools } = convert({
      '/pets': { post: { operationId: 'add', requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Pet' } } } }, responses: {} } },
    });
    const body = tools[0]!.tool.inputSchema.properties!.body as Record<string, any>;
    assert.deepEqual(body, {
      type: 'object',
      required: ['name'],
      properties: { name: { type: 'string' }, password: { type: 'string', writeOnly: true }, tags: { type: 'array', items: { type: 'object', required: ['label'], properties: { label: { type: 'string' } } } } },
    });
  });

  it('an operation\'s relative server URL is relative to where the document was fetched from', () => {
    const doc = parseDocument(JSON.stringify({ openapi: '3.1.0', info: { title: 't', version: '1' }, paths: { '/x': { get: { operationId: 'x', servers: [{ url: 'v3' }] } } } }), 'inline');
    assert.equal(convertDocument(doc, 'http://api.test/specs/openapi.json').tools[0]!.operation.basePath, '/specs/v3');
    assert.equal(convertDocument(doc).tools[0]!.operation.basePath, '/v3');
  });

  it('a path key with a `#fragment` (ReadMe\'s way to list one path twice) is called without it (`#` was sent in the request line)', () => {
    const { tools } = convert({ '/cookies#formExploded': { get: { responses: {} } } });
    assert.equal(tools[0]!.tool.name, 'get_cookies_formExploded');
    assert.equal(tools[0]!.operation.pathTemplate, '/cookies');
  });

  it('an undeclared `{constructor}` in the path is still a required string parameter (the Object method hid it)', () => {
    const { tools } = convert({ '/a/{constructor}': { get: { operationId: 'c', responses: {} } } });
    assert.deepEqual(tools[0]!.tool.inputSchema.properties!.path, { type: 'object', description: 'Path parameters.', properties: { constructor: { type: 'string' } }, required: ['constructor'] });
  });

  it('a body of another binary type (`image/png`) is base64 input, another text type (`application/xml`) text (both were left out)', () => {
    const body = (type: string) => ({ requestBody: { required: true, content: { [type]: { schema: { type: 'string' } } } }, responses: {} });
    const { tools, warnings } = convert({ '/img': { put: { operationId: 'img', ...body('image/png') } }, '/xml': { post: { operationId: 'xml', ...body('application/xml') } }, '/any': { post: { operationId: 'any', ...body('*/*') } } });
    assert.deepEqual(tools.map((t) => t.operation.body), [
      { mediaType: 'image/png', encoding: 'binary', required: true },
      { mediaType: 'application/xml', encoding: 'text', required: true },
      undefined,
    ]);
    assert.deepEqual(tools[0]!.tool.inputSchema.properties!.body, { type: 'string', contentEncoding: 'base64', contentMediaType: 'image/png', description: 'The request body, base64-encoded.' });
    // A wildcard names no type to send.
    assert.deepEqual(warnings, ['POST /any: request body of `*/*` is not one the gateway can send (a wildcard type); the tool sends none']);
  });

  it('multipart file fields in the 3.1 way (`contentMediaType`) and arrays of files take base64 too (they were sent as text)', () => {
    const schema = {
      type: 'object',
      properties: { photo: { type: 'string', contentMediaType: 'image/png' }, files: { type: 'array', items: { type: 'string', format: 'binary' } }, note: { type: 'string' } },
    };
    const { tools } = convert({ '/up': { post: { operationId: 'up', requestBody: { content: { 'multipart/form-data': { schema } } }, responses: {} } } });
    assert.deepEqual(tools[0]!.operation.body?.fileFields, ['photo', 'files']);
    // Each part's type: the document's `encoding`, else the field's `contentMediaType`; octet-stream without either.
    assert.deepEqual(tools[0]!.operation.body?.fileTypes, { photo: 'image/png' });
    const encoded = convert({
      '/up': { post: { operationId: 'up', requestBody: { content: { 'multipart/form-data': { schema, encoding: { files: { contentType: 'application/pdf, image/*' }, photo: { contentType: 'bad type' } } } } }, responses: {} } },
    });
    assert.deepEqual(encoded.tools[0]!.operation.body?.fileTypes, { photo: 'image/png', files: 'application/pdf' });
    assert.deepEqual((tools[0]!.tool.inputSchema.properties!.body as Record<string, any>).properties, {
      photo: { type: 'string', contentMediaType: 'image/png', contentEncoding: 'base64' },
      files: { type: 'array', items: { type: 'string', contentEncoding: 'base64' } },
      note: { type: 'string' },
    });
  });
});

describe('cycles', () => {
  it('a self-referencing schema terminates with a marked cut', () => {
    const { tools } = convertDocument(load('3.0/json/circular-request-bodies.json'));
    assert.deepEqual(tools.map((t) => t.tool.name), ['directCircular', 'indirectCircular', 'polymorphicCircular', 'multipleCircular']);
    const direct = JSON.stringify(byName(tools, 'directCircular').tool.inputSchema);
    assert.match(direct, /Recursive reference to `#\/components\/schemas\/TreeNode`/);
    assert.equal(direct.includes('"$ref"'), false);
    // Person → Company → Person is cut at the second Person.
    const indirect = JSON.stringify(byName(tools, 'indirectCircular').tool.inputSchema);
    assert.match(indirect, /Recursive reference to `#\/components\/schemas\/Person`/);
  });

  it('a cycle through parameters, allOf and items terminates too', () => {
    const doc = parseDocument(
      JSON.stringify({
        openapi: '3.0.0',
        info: { title: 't', version: '1' },
        components: {
          schemas: {
            A: { type: 'object', properties: { b: { $ref: '#/components/schemas/B' } } },
            B: { allOf: [{ $ref: '#/components/schemas/A' }], properties: { list: { type: 'array', items: { $ref: '#/components/schemas/B' } } } },
          },
        },
        paths: {
          '/x': {
            post: {
              parameters: [{ name: 'filter', in: 'query', content: { 'application/json': { schema: { $ref: '#/components/schemas/B' } } } }],
              requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/A' } } } },
              responses: {},
            },
          },
        },
      }),
      'inline',
    );
    const { tools } = convertDocument(doc);
    const text = JSON.stringify(tools[0]!.tool.inputSchema);
    assert.equal(text.includes('"$ref"'), false);
    assert.match(text, /Recursive reference/);
    assert.ok(text.length < 5000, `expansion stays small (${text.length})`);
    // A parameter described by `content` is sent as JSON.
    assert.equal(tools[0]!.operation.query[0]!.style, 'json');
  });

  it('a broken or external $ref is an error naming the operation', () => {
    const doc = (ref: string): OpenApiDocument =>
      parseDocument(
        JSON.stringify({
          openapi: '3.0.0',
          info: { title: 't', version: '1' },
          paths: { '/x': { post: { requestBody: { content: { 'application/json': { schema: { $ref: ref } } } }, responses: {} } } },
        }),
        'inline',
      );
    assert.throws(() => convertDocument(doc('#/components/schemas/Nope')), /POST \/x: `\$ref: #\/components\/schemas\/Nope` points at nothing/);
    assert.throws(() => convertDocument(doc('other.yaml#/Pet')), /POST \/x: `\$ref: other.yaml#\/Pet` points outside the document/);
  });
});

describe('hostile documents: header parameters the gateway owns (ADR 0134)', () => {
  it('a declared Host, framing or hop-by-hop header is left out with a warning: a model never sets it', () => {
    const header = (name: string) => ({ name, in: 'header', schema: { type: 'string' } });
    const doc = parseDocument(
      JSON.stringify({
        openapi: '3.1.0',
        info: { title: 't', version: '1' },
        paths: { '/x': { get: { operationId: 'x', parameters: ['Host', 'Transfer-Encoding', 'Content-Length', 'Connection', 'X-Ok'].map(header), responses: {} } } },
      }),
      'inline',
    );
    const { tools, warnings } = convertDocument(doc);
    const { tool, operation } = byName(tools, 'x');
    assert.deepEqual(Object.keys((tool.inputSchema.properties as Record<string, any>).header.properties), ['X-Ok']);
    assert.deepEqual(operation.header.map((p) => p.name), ['X-Ok']);
    assert.deepEqual(warnings, ['GET /x: header parameters `Host`, `Transfer-Encoding`, `Content-Length`, `Connection` are set by the gateway and are left out']);
    const built = buildRequest(operation, '', { header: { Host: 'other-site.example', 'Content-Length': '5', 'X-Ok': 'yes' } });
    assert.ok(typeof built !== 'string');
    assert.equal(built.headers.host, undefined);
    assert.equal(built.headers['content-length'], undefined);
    assert.equal(built.headers['x-ok'], 'yes');
  });
});

describe('hostile documents: how large the tools may get (ADR 0134)', () => {
  const json = { 'application/json': { schema: {} } };
  const post = (operationId: string, ref: string) => ({ post: { operationId, requestBody: { content: { 'application/json': { schema: { $ref: ref } } } }, responses: {} } });

  it('a schema whose $refs expand exponentially (4 KB of document, 2^30 leaves) leaves its tool out, with a warning', () => {
    const schemas: Record<string, unknown> = { S30: { type: 'string' } };
    for (let i = 0; i < 30; i++) schemas[`S${i}`] = { type: 'object', properties: { a: { $ref: `#/components/schemas/S${i + 1}` }, b: { $ref: `#/components/schemas/S${i + 1}` } } };
    const doc = parseDocument(
      JSON.stringify({
        openapi: '3.1.0',
        info: { title: 't', version: '1' },
        paths: { '/bomb': post('bomb', '#/components/schemas/S0'), '/fine': post('fine', '#/components/schemas/S25'), '/plain': { get: { operationId: 'plain', responses: { 200: { content: json } } } } },
        components: { schemas },
      }),
      'inline',
    );
    const started = performance.now();
    const { tools, warnings } = convertDocument(doc);
    assert.deepEqual(tools.map((t) => t.tool.name), ['fine', 'plain']);
    assert.ok(warnings.some((w) => w.startsWith('POST /bomb: left out') && w.includes('4 MiB')), warnings.join('\n'));
    assert.ok(JSON.stringify(tools.map((t) => t.tool)).length < 4 * 1024 * 1024);
    assert.ok(performance.now() - started < 2000, 'measured without serialising');
  });

  it('cycles that multiply (each schema uses the next twice and the first again): operations left out past their share of nodes, at once', () => {
    const schemas: Record<string, unknown> = { S30: { type: 'string' } };
    for (let i = 0; i < 30; i++) {
      schemas[`S${i}`] = { type: 'object', properties: { a: { $ref: `#/components/schemas/S${i + 1}` }, b: { $ref: `#/components/schemas/S${i + 1}` }, back: { $ref: '#/components/schemas/S0' } } };
    }
    const paths: Record<string, unknown> = { '/ok': { get: { operationId: 'ok', responses: {} } } };
    for (let i = 0; i < 30; i++) paths[`/loop${i}`] = post(`loop${i}`, '#/components/schemas/S0');
    const started = performance.now();
    const { tools, warnings } = convertDocument(parseDocument(JSON.stringify({ openapi: '3.1.0', info: { title: 't', version: '1' }, paths, components: { schemas } }), 'inline'));
    const ms = performance.now() - started;
    assert.deepEqual(tools.map((t) => t.tool.name), ['ok']);
    // Each counts one node past its share.
    const perOperation = Math.floor(MAX_DOCUMENT_NODES / (MAX_OPERATION_NODES + 1));
    assert.equal(warnings.length, 30);
    assert.equal(warnings.filter((w) => w.includes(`its schemas take more than ${MAX_OPERATION_NODES} nodes`)).length, perOperation);
    assert.equal(warnings.filter((w) => w.includes(`the document's schemas took more than ${MAX_DOCUMENT_NODES} nodes`)).length, 30 - perOperation);
    // Expanded to the end, 30 levels took the better part of an hour.
    assert.ok(ms < 20_000, `${Math.round(ms)} ms`);
  });

  /** Operation `deep`, whose body is `levels` arrays nested, and operation `ok`. */
  const deepDocument = (levels: number): ReturnType<typeof convertDocument> => {
    let schema = '{"type":"string"}';
    for (let i = 0; i < levels; i++) schema = `{"type":"array","items":${schema}}`;
    const text = `{"openapi":"3.1.0","info":{"title":"t","version":"1"},"paths":{"/deep":{"post":{"operationId":"deep","requestBody":{"content":{"application/json":{"schema":${schema}}}},"responses":{}}},"/ok":{"get":{"operationId":"ok","responses":{}}}}}`;
    return convertDocument(parseDocument(text, 'inline'));
  };

  it('a schema nested 2,000 levels deep leaves its tool out, with a warning (every tools/list copy of it failed)', () => {
    const { tools, warnings } = deepDocument(2000);
    assert.deepEqual(tools.map((t) => t.tool.name), ['ok']);
    assert.deepEqual(warnings, ["POST /deep: left out: its tool's input schema, with every `$ref` inlined, nests 2004 levels deep (at most 128)"]);
    structuredClone(tools.map((t) => t.tool));
  });

  it('a schema nested 20,000 levels deep (past what the converter can recurse) leaves only its tool out', () => {
    const { tools, warnings } = deepDocument(20_000);
    assert.deepEqual(tools.map((t) => t.tool.name), ['ok']);
    assert.deepEqual(warnings, ['POST /deep: left out: its schemas nest too deeply to convert']);
  });

  it('10,000 operations with one operationId are named in linear time (x, x_2, ... x_10000)', () => {
    const paths: Record<string, unknown> = {};
    for (let i = 0; i < 10_000; i++) paths[`/p${i}`] = { get: { operationId: 'x', responses: {} } };
    const started = performance.now();
    const { tools } = convertDocument(parseDocument(JSON.stringify({ openapi: '3.1.0', info: { title: 't', version: '1' }, paths }), 'inline'));
    const ms = performance.now() - started;
    assert.equal(tools.length, 10_000);
    assert.deepEqual([tools[0]!.tool.name, tools[1]!.tool.name, tools[9_999]!.tool.name], ['x', 'x_2', 'x_10000']);
    assert.equal(new Set(tools.map((t) => t.tool.name)).size, 10_000);
    // Searching for a free suffix from 2 at every operation took 25 s for 30,000 here.
    assert.ok(ms < 2000, `${Math.round(ms)} ms`);
  });

  it('past 10,000 tools the rest are counted, not converted (1,000,000 bare operations, 20 MiB, took 12 s and 1.4 GiB)', () => {
    const parts: string[] = [];
    for (let i = 0; i < 100_000; i++) parts.push(`"/${i}":{"get":{}}`);
    const doc = parseDocument(`{"openapi":"3.1.0","info":{"title":"t","version":"1"},"paths":{${parts.join(',')}}}`, 'inline');
    const { tools, warnings } = convertDocument(doc);
    assert.equal(tools.length, 10_000);
    assert.equal(tools.at(-1)!.tool.name, 'get_9999');
    assert.deepEqual(warnings, ['90000 operations left out: a document gives at most 10000 tools']);
  });

  it('a chain of parameter `$ref`s, each with a sibling, leaves its operations out at once (5,000 links, 290 KB, blocked the loader 51 s)', () => {
    const parameters: Record<string, unknown> = {};
    for (let i = 0; i < 5000; i++) parameters[`p${i}`] = { $ref: `#/components/parameters/p${i + 1}`, [`x${i}`]: 1 };
    parameters.p5000 = { name: 'q', in: 'query', schema: { type: 'string' } };
    parameters.short = { $ref: '#/components/parameters/p4990', description: 'outer' };
    const paths: Record<string, unknown> = { '/ok': { get: { operationId: 'ok', parameters: [{ $ref: '#/components/parameters/short' }] } } };
    for (let j = 0; j < 10; j++) paths[`/a${j}`] = { get: { operationId: `a${j}`, parameters: [{ $ref: '#/components/parameters/p0' }] } };
    const started = performance.now();
    const { tools, warnings } = convertDocument(parseDocument(JSON.stringify({ openapi: '3.1.0', info: { title: 't', version: '1' }, paths, components: { parameters } }), 'inline'));
    const ms = performance.now() - started;
    assert.deepEqual(tools.map((t) => t.tool.name), ['ok']);
    // The outermost sibling wins, as before.
    assert.deepEqual((tools[0]!.tool.inputSchema.properties!.query as Record<string, any>).properties.q, { type: 'string', description: 'outer' });
    assert.equal(warnings.length, 10);
    assert.equal(warnings[0], 'GET /a0: left out: `$ref: #/components/parameters/p0` starts a chain of more than 64 references');
    assert.ok(ms < 2000, `${Math.round(ms)} ms`);
  });

  it('a huge enum used by many operations: tools past 32 MiB of JSON in all are left out, with one warning', () => {
    const values = Array.from({ length: 100_000 }, (_, i) => `value-${i}`);
    const paths: Record<string, unknown> = {};
    for (let i = 0; i < 40; i++) paths[`/op${i}`] = post(`op${i}`, '#/components/schemas/Big');
    const doc = parseDocument(JSON.stringify({ openapi: '3.1.0', info: { title: 't', version: '1' }, paths, components: { schemas: { Big: { type: 'string', enum: values } } } }), 'inline');
    const { tools, warnings } = convertDocument(doc);
    const one = JSON.stringify(tools[0]!.tool).length;
    assert.equal(tools.length, Math.floor((32 * 1024 * 1024) / one));
    assert.equal(warnings[0], `${40 - tools.length} operations left out: the tools before them reached 32 MiB of JSON`);
  });
});

describe('every @readme/oas-examples OpenAPI 3.x document', () => {
  // This document carries a `pattern` that is not a valid regular expression; the tool is still produced.
  const INVALID_IN_SOURCE = new Set(['schema-validation.json/get_anything_strings', 'schema-validation.yaml/get_anything_strings']);
  for (const dir of ['3.0/json', '3.0/yaml', '3.1/json', '3.1/yaml']) {
    it(`${dir}: converts, and each tool is a valid MCP Tool whose input schema compiles`, () => {
      const ajv = new Ajv2020({ strict: false, validateFormats: false });
      let count = 0;
      for (const file of readdirSync(join(EXAMPLES, dir)).filter((f) => /\.(json|yaml)$/.test(f))) {
        const { tools } = convertDocument(load(`${dir}/${file}`));
        for (const { tool } of tools) {
          count++;
          ToolSchema.parse(tool);
          assert.equal(JSON.stringify(tool.inputSchema).includes('"$ref"'), false, `${file} ${tool.name}`);
          if (!INVALID_IN_SOURCE.has(`${file}/${tool.name}`)) ajv.compile(tool.inputSchema);
        }
      }
      assert.ok(count > 20);
    });
  }
});

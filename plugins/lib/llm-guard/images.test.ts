import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { requestImages } from './images.ts';

describe('requestImages (ADR 0181)', () => {
  it('every client API\'s image parts, as URLs, in document order; tool definitions and non-images left out', () => {
    const chat = {
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'image_url', image_url: { url: 'https://x.example/1.png' } }, { type: 'image_url', image_url: 'data:image/png;base64,AA' }] },
        { role: 'user', content: [{ type: 'image_url', image_url: { url: 'file:///etc/passwd' } }] },
      ],
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'image_url', image_url: { url: 'https://x.example/tool.png' } } } }],
    };
    assert.deepEqual(requestImages(chat), ['https://x.example/1.png', 'data:image/png;base64,AA']);
    const responses = { input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://x.example/2.png' }, { type: 'input_image', file_id: 'file-1' }] }] };
    assert.deepEqual(requestImages(responses), ['https://x.example/2.png']);
    const anthropic = {
      messages: [
        { role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: 'BB' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'image', source: { type: 'url', url: 'https://x.example/3.png' } }] }] },
      ],
    };
    assert.deepEqual(requestImages(anthropic), ['data:image/jpeg;base64,BB', 'https://x.example/3.png']);
    const gemini = {
      contents: [
        { role: 'user', parts: [{ inlineData: { mimeType: 'image/webp', data: 'CC' } }, { inline_data: { mime_type: 'application/pdf', data: 'DD' } }] },
        { role: 'user', parts: [{ fileData: { mimeType: 'image/png', fileUri: 'https://x.example/4.png' } }, { file_data: { mime_type: 'image/png', file_uri: 'gs://b/5.png' } }] },
      ],
    };
    assert.deepEqual(requestImages(gemini), ['data:image/webp;base64,CC', 'https://x.example/4.png']);
  });
});

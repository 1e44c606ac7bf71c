// Types of the undici modules kernel/upstream/undici-core.ts imports by path (undici types its index only).
declare module 'undici/lib/dispatcher/pool.js' {
  const Pool: typeof import('undici').Pool;
  export default Pool;
}
declare module 'undici/lib/core/connect.js' {
  const buildConnector: typeof import('undici').buildConnector;
  export default buildConnector;
}
declare module 'undici/lib/api/api-request.js' {
  const request: (this: import('undici').Dispatcher, options: import('undici').Dispatcher.RequestOptions) => Promise<import('undici').Dispatcher.ResponseData>;
  export default request;
}
declare module 'undici/lib/core/util.js' {
  const util: {
    destroy(stream: NodeJS.ReadableStream, err?: Error): void;
    headerNameToString(name: Buffer | string): string;
    parseHeaders(raw: readonly (Buffer | string)[]): Record<string, string | string[]>;
  };
  export default util;
}

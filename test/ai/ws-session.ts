// A WebSocket client session for the realtime and Live tests: the messages it got (parsed, a large one summarised) and
// how it closed, bounded (a session the gateway does not close is a failure, not a hang).
import WebSocket from 'ws';

export interface WsSession {
  ws: WebSocket;
  messages: Record<string, unknown>[];
  closed: Promise<{ code: number; reason: string }>;
}

/** Opens `url`; each message is parsed, one over 1000 characters kept as `large(text)`. */
export async function openWsSession(url: string, headers: Record<string, string>, large: (text: string) => Record<string, unknown>): Promise<WsSession> {
  const ws = new WebSocket(url, { headers });
  const messages: Record<string, unknown>[] = [];
  ws.on('message', (data) => {
    const text = data.toString();
    messages.push(text.length > 1000 ? large(text) : (JSON.parse(text) as Record<string, unknown>));
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the session was not closed')), 5000);
    ws.once('close', (code, reason) => {
      clearTimeout(timer);
      resolve({ code, reason: reason.toString() });
    });
  });
  closed.catch(() => ws.terminate());
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return { ws, messages, closed };
}

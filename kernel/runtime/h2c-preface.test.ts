import assert from 'node:assert/strict';
import { Socket } from 'node:net';
import { describe, it } from 'node:test';
import { H2_PREFACE_ERROR, takeH2cConnection } from './h2c-preface.ts';

const PREFACE = 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n';

/** A socket carrying node:http's per-connection listeners as node names them, `rename` given another name. */
function served(rename?: string): Socket {
  const s = new Socket();
  const named = (name: string): (() => void) => Object.defineProperty(() => undefined, 'name', { value: name === rename ? `${name} renamed` : name });
  s.on('data', named('bound socketOnData'));
  s.on('end', named('bound socketOnEnd'));
  s.on('close', named('bound socketOnClose'));
  s.on('drain', named('bound socketOnDrain'));
  s.on('timeout', named('socketOnTimeout'));
  s.on('resume', named('onSocketResume'));
  s.on('pause', named('onSocketPause'));
  return s;
}

const EVENTS = ['data', 'end', 'close', 'drain', 'timeout', 'resume', 'pause'];
/** The listeners named like node:http's (a net.Socket has its own 'end' listener). */
const nodes = (s: Socket, event: string): number => s.listeners(event).filter((l) => /socketOn|onSocket/.test(l.name)).length;

const preface = (): NodeJS.ErrnoException & { rawPacket: Buffer; bytesParsed: number } =>
  Object.assign(new Error('Parse Error'), { code: H2_PREFACE_ERROR, rawPacket: Buffer.from(PREFACE, 'latin1'), bytesParsed: PREFACE.length });

describe('takeH2cConnection (ADR 0158)', () => {
  it("takes node:http's listeners off a connection that sent the preface", () => {
    const s = served();
    assert.equal(takeH2cConnection(preface(), s), true);
    for (const event of EVENTS) assert.equal(nodes(s, event), 0, event);
    s.destroy();
  });

  it('takes nothing when one of node:http\'s listeners is not found by its name (the 400 stands)', () => {
    for (const name of ['bound socketOnData', 'socketOnTimeout']) {
      const s = served(name);
      assert.equal(takeH2cConnection(preface(), s), false, name);
      for (const event of EVENTS) assert.equal(nodes(s, event), 1, `${name}: ${event} left as it was`);
      s.destroy();
    }
  });
});

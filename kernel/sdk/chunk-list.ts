/**
 * Chunks of a body kept in the order they came, small ones joined as they come. Chunked framing lets a
 * client send a body in 1-byte chunks, each a Buffer of its own (some 200 bytes of heap): 1 MiB kept as it came took
 * 200 MB, 2 MiB (the `bufferBody` default) 400 MB from 12 MB on the wire. Runs of chunks under 1 KiB are joined at
 * 256 chunks or 16 KiB, so a list holds at most about one Buffer per 256 bytes; larger chunks are kept as they are.
 */
/** Chunks at least this large are kept (and by stream-answer.ts pushed) as they come; smaller ones are joined. */
export const SMALL_CHUNK = 1024;
const RUN_CHUNKS = 256;
const RUN_BYTES = 16 * 1024;

export class ChunkList {
  private readonly chunks: Buffer[] = [];
  private run: Buffer[] = [];
  private runBytes = 0;
  /** Bytes added. */
  size = 0;

  add(chunk: Buffer): void {
    this.size += chunk.length;
    if (chunk.length >= SMALL_CHUNK) {
      this.joinRun();
      this.chunks.push(chunk);
      return;
    }
    this.run.push(chunk);
    this.runBytes += chunk.length;
    if (this.run.length >= RUN_CHUNKS || this.runBytes >= RUN_BYTES) this.joinRun();
  }

  /** The bytes added, in order, as few Buffers as the joined runs make them. */
  list(): Buffer[] {
    this.joinRun();
    return this.chunks;
  }

  /** The bytes added, as one Buffer (the chunk itself when there is one). */
  whole(): Buffer {
    const list = this.list();
    return list.length === 1 ? list[0]! : Buffer.concat(list, this.size);
  }

  private joinRun(): void {
    if (this.run.length === 0) return;
    this.chunks.push(this.run.length === 1 ? this.run[0]! : Buffer.concat(this.run, this.runBytes));
    this.run = [];
    this.runBytes = 0;
  }
}

/**
 * Readers that follow a user's events feed while others write, and the load they follow (events-cursor-load.test.ts):
 * each reader is one procedure a client would run, polled every few milliseconds, counting what it saw.
 *
 * - `createdAfterReader`: what docs/events.md told clients before the cursor: remember the newest `created_at`
 *   processed, page through `created_after=<it>` (newest first) until `next` runs out, skipping ids already had.
 * - `cursorReader`: `after=<the last id received>`, oldest first, following full pages.
 */
import type { Response, Server } from "./server.ts"

interface FeedEvent {
  readonly id: string
  readonly created_at: string
}

export interface FeedReader {
  /** One catch-up: reads what the procedure reads now. */
  readonly poll: () => Promise<void>
  /** How many times each event id was received (a count above 1 is a duplicate). */
  readonly seen: Map<string, number>
}

type Request = Server["request"]

const expectOk = (res: Response, what: string) => {
  if (res.status !== 200) throw new Error(`${what}: ${res.status} ${res.text}`)
}

/** The `created_after` procedure, starting after `start` (an event already processed). */
export const createdAfterReader = (request: Request, key: string, start: FeedEvent): FeedReader => {
  let mark = start.created_at
  const seen = new Map<string, number>([[start.id, 1]])
  const poll = async () => {
    let newest = mark
    for (let page = 1; ; page++) {
      const res = await request(`/v1/events?created_after=${encodeURIComponent(mark)}&per_page=100&page=${page}`, {
        key
      })
      expectOk(res, "created_after page")
      for (const event of res.body.data as ReadonlyArray<FeedEvent>) {
        // Ids already had are skipped, as the procedure says: never counted twice.
        if (!seen.has(event.id)) seen.set(event.id, 1)
        if (event.created_at > newest) newest = event.created_at
      }
      if (!(res.headers.get("link") ?? "").includes('rel="next"')) break
    }
    mark = newest
  }
  return { poll, seen }
}

/** The cursor procedure, starting after `start`. */
export const cursorReader = (request: Request, key: string, start: FeedEvent): FeedReader => {
  let cursor = start.id
  const seen = new Map<string, number>([[start.id, 1]])
  const poll = async () => {
    for (;;) {
      const res = await request(`/v1/events?after=${cursor}&per_page=100`, { key })
      expectOk(res, "after page")
      const events = res.body.data as ReadonlyArray<FeedEvent>
      for (const event of events) seen.set(event.id, (seen.get(event.id) ?? 0) + 1)
      const last = events.at(-1)
      if (last !== undefined) cursor = last.id
      if (events.length < 100) break
    }
  }
  return { poll, seen }
}

export interface LoadResult {
  /** Every event of the user once the writers are done (the numbered listing, at rest). */
  readonly written: ReadonlySet<string>
  readonly missed: number
  readonly duplicates: number
}

/**
 * `writers` concurrent writers each create `perWriter` projects for the user of `key`, writer `i` through
 * `servers[i % servers.length]`, while `reader` polls every `intervalMs`. Once they are done the reader polls until
 * `settled` says it has what it will get; answers what it missed and saw twice.
 */
export const runLoad = async (options: {
  readonly servers: ReadonlyArray<Server>
  readonly key: string
  readonly writers: number
  readonly perWriter: number
  readonly reader: FeedReader
  readonly intervalMs?: number
  /** After the writers: polls until this answers true (given the events written and the reader's). */
  readonly settled: (written: ReadonlySet<string>, reader: FeedReader) => Promise<boolean>
}): Promise<LoadResult> => {
  const { key, reader, servers } = options
  let writing = true
  const polling = (async () => {
    while (writing) {
      await reader.poll()
      await Bun.sleep(options.intervalMs ?? 3)
    }
  })()
  const writes = Array.from({ length: options.writers }, async (_, writer) => {
    const server = servers[writer % servers.length]!
    for (let i = 0; i < options.perWriter; i++) {
      const res = await server.request("/v1/projects", {
        method: "POST",
        key,
        body: { name: `writer ${writer} project ${i}` }
      })
      if (res.status !== 201) throw new Error(`create: ${res.status} ${res.text}`)
    }
  })
  try {
    await Promise.all(writes)
  } finally {
    writing = false
    await polling
  }
  const written = new Set<string>()
  for (let page = 1; ; page++) {
    const res = await servers[0]!.request(`/v1/events?per_page=100&page=${page}`, { key })
    expectOk(res, "numbered page")
    for (const event of res.body.data as ReadonlyArray<FeedEvent>) written.add(event.id)
    if (res.body.data.length < 100) break
  }
  while (!(await options.settled(written, reader))) await Bun.sleep(20)
  let missed = 0
  for (const id of written) if (!reader.seen.has(id)) missed++
  let duplicates = 0
  for (const count of reader.seen.values()) if (count > 1) duplicates += count - 1
  return { written, missed, duplicates }
}

/** Settled once the reader has every event written (it keeps polling meanwhile), or `timeoutMs` after the first call. */
export const untilAllSeen = (timeoutMs: number) => {
  let deadline: number | undefined
  return async (written: ReadonlySet<string>, reader: FeedReader) => {
    deadline ??= Date.now() + timeoutMs
    await reader.poll()
    return Date.now() > deadline || [...written].every((id) => reader.seen.has(id))
  }
}

/** Settled after `polls` more polls: what a reader that missed an event will never get back. */
export const afterPolls = (polls: number) => {
  let left = polls
  return async (_written: ReadonlySet<string>, reader: FeedReader) => {
    await reader.poll()
    left--
    return left <= 0
  }
}

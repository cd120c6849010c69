/**
 * Preloaded into a server by `bench/rss-breakdown.sh` (`BUN_OPTIONS=--preload`): on SIGUSR2 it runs a full
 * collection, then writes the JS heap's figures (`bun:jsc`'s `heapStats`) and the process's memory to
 * `$HEAP_PROBE_DIR/heap-<pid>.json`. Nothing else: the server runs as it would without it.
 */
import { heapStats } from "bun:jsc"
import { writeFileSync } from "node:fs"

process.on("SIGUSR2", () => {
  Bun.gc(true)
  const stats = heapStats()
  writeFileSync(
    `${process.env.HEAP_PROBE_DIR ?? "/tmp"}/heap-${process.pid}.json`,
    JSON.stringify({
      heapSize: stats.heapSize,
      heapCapacity: stats.heapCapacity,
      objectCount: stats.objectCount,
      rss: process.memoryUsage().rss
    })
  )
})

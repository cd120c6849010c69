// engine-independent: the production install, always on SQLite (it sets DATABASE_URL empty, as a bare `docker run`)
/**
 * The container set-up, read against what the service needs (there is no Docker engine here): the Dockerfile's
 * production install really runs the service and the CLI (no runtime import of a dev dependency), it runs as a
 * non-root user with bun as PID 1, and docker-compose.yml uses the image and gives the service time to drain.
 */
import { expect, test } from "bun:test"
import { cpSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const ROOT = join(import.meta.dir, "..", "..")
const dockerfile = readFileSync(join(ROOT, "Dockerfile"), "utf8")
const compose = readFileSync(join(ROOT, "docker-compose.yml"), "utf8")
const dockerignore = readFileSync(join(ROOT, ".dockerignore"), "utf8")
  .split("\n")
  .map((line) => line.trim())

/** The instructions, continuation lines joined, comments dropped. */
const instructions = dockerfile
  .replace(/\\\n\s*/g, " ")
  .split("\n")
  .filter((line) => line.trim() !== "" && !line.startsWith("#"))

test("the Dockerfile: multi-stage, frozen production install, non-root, exec-form CMD", () => {
  expect(instructions.filter((line) => line.startsWith("FROM ")).length).toBeGreaterThanOrEqual(2)
  expect(instructions).toContain("RUN bun install --frozen-lockfile --production")
  const users = instructions.filter((line) => line.startsWith("USER "))
  expect(users.length).toBeGreaterThan(0)
  expect(users.at(-1)).not.toMatch(/^USER (root|0)\b/)
  const cmd = instructions.filter((line) => line.startsWith("CMD ")).at(-1)!
  // Exec form (a JSON array), so bun is PID 1 and gets SIGTERM; not `sh -c`.
  const argv = JSON.parse(cmd.slice(4))
  expect(argv).toEqual(["bun", "src/main.ts"])
  expect(instructions.some((line) => line.startsWith("ENTRYPOINT "))).toBe(false)
  // What the image copies is not excluded by .dockerignore, and what must stay out is.
  for (const copied of ["package.json", "bun.lock", "src"]) expect(dockerignore).not.toContain(copied)
  for (const excluded of ["node_modules", ".git", "data", ".env"]) expect(dockerignore).toContain(excluded)
})

test("docker-compose.yml builds the image, mounts no checkout, and lets the service drain before SIGKILL", () => {
  const service = compose.split(/\n {2}postgres:/)[0]!
  expect(service).toMatch(/\n {4}build: \.\n/)
  expect(service).not.toMatch(/\n {4}volumes:/)
  expect(service).not.toMatch(/\n {4}command:/)
  expect(service).not.toContain("sh -c")
  const grace = /\n {4}stop_grace_period: (\d+)s/.exec(service)
  expect(grace).not.toBeNull()
  const shutdown = /\n {6}SHUTDOWN_TIMEOUT: "(\d+)s"/.exec(service)
  expect(Number(grace![1])).toBeGreaterThan(Number(shutdown?.[1] ?? 20))
})

test("the production install (as the image makes it) starts the service and runs the CLI", async () => {
  const dir = mkdtempSync(join(tmpdir(), "pcs-image-"))
  try {
    // What the Dockerfile copies, then its install step.
    for (const file of ["package.json", "bun.lock", "tsconfig.json"]) cpSync(join(ROOT, file), join(dir, file))
    cpSync(join(ROOT, "src"), join(dir, "src"), { recursive: true })
    const install = Bun.spawnSync(["bun", "install", "--frozen-lockfile", "--production"], {
      cwd: dir,
      stdout: "pipe",
      stderr: "pipe"
    })
    expect({ code: install.exitCode, stderr: install.exitCode === 0 ? "" : install.stderr.toString() }).toEqual({
      code: 0,
      stderr: ""
    })

    const env = { ...process.env, NODE_ENV: "production", DATABASE_URL: "", LOG_LEVEL: "warning" }
    const help = Bun.spawnSync(["bun", "run", "cli", "--help"], { cwd: dir, env, stdout: "pipe", stderr: "pipe" })
    expect(help.exitCode).toBe(0)
    expect(help.stdout.toString()).toContain("usage: bun run cli")

    const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() })
    const port = probe.port!
    probe.stop(true)
    // DATABASE_URL unset, as in a bare `docker run`: the default ./data/service.sqlite inside the directory.
    const proc = Bun.spawn(["bun", "src/main.ts"], {
      cwd: dir,
      env: { ...env, HOST: "127.0.0.1", PORT: String(port) },
      stdout: "pipe",
      stderr: "pipe"
    })
    try {
      let ready = false
      const deadline = Date.now() + 30_000
      while (!ready && Date.now() < deadline && proc.exitCode === null) {
        ready = await fetch(`http://127.0.0.1:${port}/health/ready`).then(
          (r) => r.ok,
          () => false
        )
        if (!ready) await Bun.sleep(100)
      }
      expect(ready).toBe(true)
      // /docs is rendered by the server from the OpenAPI document: one page, no asset to fetch.
      const docs = await fetch(`http://127.0.0.1:${port}/docs`)
      expect(docs.status).toBe(200)
      expect(await docs.text()).toContain("Projects")
    } finally {
      proc.kill("SIGTERM")
      // SIGTERM alone ends it (the exec-form CMD relies on this): a drained, clean exit.
      expect(await proc.exited).toBe(0)
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}, 90_000)

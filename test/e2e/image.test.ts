// engine-independent: the Docker image, always on SQLite
/**
 * The Docker image's file set: the `Dockerfile`'s own `COPY` lines (read from the file, stage by stage, honouring
 * `.dockerignore`) are carried out into a temporary folder, a `--from` stage's `RUN bun install …` is run there as the
 * image build runs it, and the server started from that folder must serve the dashboard, /docs and the OpenAPI
 * document. A file the server reads at run time that the image leaves out fails here, without Docker.
 */
import { afterAll, beforeAll, expect, test } from "bun:test"
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, relative } from "node:path"
import type { Subprocess } from "bun"
import { runCli } from "../support/server.ts"

const ROOT = join(import.meta.dir, "..", "..")

interface Stage {
  readonly name: string
  readonly instructions: ReadonlyArray<{ readonly keyword: string; readonly args: string }>
}

/** The Dockerfile's stages, each with its instructions (continuation lines joined, comments dropped). */
const parseDockerfile = (text: string): ReadonlyArray<Stage> => {
  const lines = text
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"))
  const stages: Array<{ name: string; instructions: Array<{ keyword: string; args: string }> }> = []
  for (const line of lines) {
    const [, keyword = "", args = ""] = /^(\S+)\s*(.*)$/.exec(line) ?? []
    if (keyword.toUpperCase() === "FROM") {
      stages.push({ name: /\bAS\s+(\S+)/i.exec(args)?.[1] ?? String(stages.length), instructions: [] })
    } else {
      stages.at(-1)?.instructions.push({ keyword: keyword.toUpperCase(), args })
    }
  }
  return stages
}

/** `.dockerignore`'s patterns; an exception (`!…`) is not supported here, so one fails the test loudly. */
const ignorePatterns = (text: string) => {
  const patterns = text
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => line.replace(/^\/+/, "").replace(/\/+$/, ""))
  for (const pattern of patterns) if (pattern.startsWith("!")) throw new Error(`unsupported: ${pattern}`)
  return patterns.map((pattern) => new Bun.Glob(pattern))
}

/** Docker's rule: a path is left out of the context when it, or a folder it is in, matches a pattern. */
const ignoredBy = (globs: ReadonlyArray<Bun.Glob>) => (path: string) => {
  const parts = path.split("/")
  return parts.some((_, i) => globs.some((glob) => glob.match(parts.slice(0, i + 1).join("/"))))
}

/** Copies `source` (a file or folder of the build context) to `target`, leaving out what `.dockerignore` does. */
const copyFromContext = (source: string, target: string, ignored: (path: string) => boolean) => {
  const path = relative(ROOT, join(ROOT, source))
  if (ignored(path)) throw new Error(`COPY ${source}: excluded by .dockerignore`)
  const from = join(ROOT, path)
  if (!existsSync(from)) throw new Error(`COPY ${source}: not in the build context`)
  if (statSync(from).isDirectory()) {
    for (const entry of readdirSync(from, { recursive: true, encoding: "utf8" })) {
      const child = join(path, entry)
      if (ignored(child) || statSync(join(ROOT, child)).isDirectory()) continue
      mkdirSync(dirname(join(target, entry)), { recursive: true })
      cpSync(join(ROOT, child), join(target, entry))
    }
  } else {
    mkdirSync(dirname(target), { recursive: true })
    cpSync(from, target)
  }
}

const run = async (command: ReadonlyArray<string>, cwd: string) => {
  const proc = Bun.spawn([...command], { cwd, stdout: "pipe", stderr: "pipe" })
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited
  ])
  if (code !== 0) throw new Error(`${command.join(" ")} exited ${code}:\n${stdout}\n${stderr}`)
}

/**
 * Builds `stageName` into `into` (its WORKDIR), as `docker build` would: COPY from the context or from an earlier
 * stage, and `RUN bun install …`. Other RUN lines (folders, ownership) do not change which files are there.
 * Returns the stage's WORKDIR and the ENV it sets.
 */
const buildStage = async (
  stages: ReadonlyArray<Stage>,
  stageName: string,
  into: string,
  ignored: (path: string) => boolean
): Promise<{ readonly workdir: string; readonly env: Record<string, string> }> => {
  const stage = stages.find((candidate) => candidate.name === stageName)
  if (stage === undefined) throw new Error(`no stage ${stageName}`)
  let workdir = "/"
  const env: Record<string, string> = {}
  const inStage = (path: string) => join(into, relative(workdir, path.startsWith("/") ? path : join(workdir, path)))
  for (const { keyword, args } of stage.instructions) {
    if (keyword === "WORKDIR") workdir = args
    if (keyword === "ENV") {
      for (const [, name = "", value = ""] of args.matchAll(/(\w+)=("[^"]*"|\S+)/g)) env[name] = value.replace(/"/g, "")
    }
    if (keyword === "RUN" && /^bun install\b/.test(args)) await run(args.split(/\s+/), into)
    if (keyword !== "COPY") continue
    const words = args.split(/\s+/)
    const from = words.find((word) => word.startsWith("--from="))?.slice("--from=".length)
    const paths = words.filter((word) => !word.startsWith("--"))
    const destination = paths.at(-1) ?? "."
    const sources = paths.slice(0, -1)
    const intoFolder = destination.endsWith("/") || sources.length > 1
    for (const source of sources) {
      const name = source.replace(/\/+$/, "").split("/").at(-1) ?? source
      const target = intoFolder ? join(inStage(destination), name) : inStage(destination)
      if (from === undefined) {
        copyFromContext(source, target, ignored)
      } else {
        // Another stage: build it in a folder of its own and copy the path out of it.
        const other = mkdtempSync(join(tmpdir(), `pcs-image-${from}-`))
        const built = await buildStage(stages, from, other, () => false)
        cpSync(join(other, relative(built.workdir, source)), target, { recursive: true })
        rmSync(other, { recursive: true, force: true })
      }
    }
  }
  return { workdir, env }
}

let folder: string
let server: Subprocess<"ignore", "pipe", "pipe"> | undefined
let url: string
let output = ""

beforeAll(async () => {
  const stages = parseDockerfile(await Bun.file(join(ROOT, "Dockerfile")).text())
  const ignored = ignoredBy(ignorePatterns(await Bun.file(join(ROOT, ".dockerignore")).text()))
  folder = mkdtempSync(join(tmpdir(), "pcs-image-"))
  const final = stages.at(-1)
  if (final === undefined) throw new Error("the Dockerfile has no stage")
  const { env } = await buildStage(stages, final.name, folder, ignored)

  // A free loopback port, and a temporary SQLite database.
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  url = `http://127.0.0.1:${port}`
  const cmd = final.instructions.filter((instruction) => instruction.keyword === "CMD").at(-1)?.args ?? ""
  const command: Array<string> = JSON.parse(cmd)
  expect(command).toEqual(["bun", "src/main.ts"])
  server = Bun.spawn(["bun", "--no-orphans", ...command.slice(1)], {
    cwd: folder,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      ...env,
      HOST: "127.0.0.1",
      PORT: String(port),
      DATABASE_URL: `sqlite:${join(folder, "data", "test.sqlite")}`,
      LOG_LEVEL: "warn"
    },
    stdout: "pipe",
    stderr: "pipe"
  })
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    const reader = stream.getReader()
    const decoder = new TextDecoder()
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
      output += decoder.decode(chunk.value)
  }
  void collect(server.stdout)
  void collect(server.stderr)
  // Ready when /health/ready answers 200; a server that exits first fails with what it printed.
  for (let attempt = 0; ; attempt++) {
    if (server.exitCode !== null) throw new Error(`the server exited ${server.exitCode}:\n${output}`)
    const ready = await fetch(`${url}/health/ready`).then(
      (response) => response.status,
      () => 0
    )
    if (ready === 200) break
    if (attempt > 300) throw new Error(`the server never became ready:\n${output}`)
    await Bun.sleep(100)
  }
}, 180_000)

afterAll(async () => {
  server?.kill()
  await server?.exited
  if (folder !== undefined) rmSync(folder, { recursive: true, force: true })
})

test("the image's files serve the dashboard, with its script", async () => {
  const shell = await fetch(`${url}/dashboard`)
  const html = await shell.text()
  expect({ status: shell.status, body: shell.status === 200 ? "" : html }).toEqual({ status: 200, body: "" })
  expect(shell.headers.get("content-type")).toContain("text/html")
  const script = /<script[^>]+src="(\/dashboard\/assets\/[^"]+\.js)"/.exec(html)?.[1]
  expect(script).toBeDefined()
  const asset = await fetch(`${url}${script}`)
  expect(asset.status).toBe(200)
  expect(asset.headers.get("content-type")).toContain("javascript")
  expect((await asset.text()).length).toBeGreaterThan(1000)
  // `/` sends a person there.
  const root = await fetch(`${url}/`, { redirect: "manual" })
  expect(root.status).toBe(302)
  expect(root.headers.get("location")).toBe("/dashboard")
}, 60_000)

test("the image's files serve /docs and the OpenAPI document", async () => {
  const docs = await fetch(`${url}/docs`)
  expect(docs.status).toBe(200)
  expect(docs.headers.get("content-type")).toContain("text/html")
  const openapi = await fetch(`${url}/v1/openapi.json`)
  expect(openapi.status).toBe(200)
  const document = await openapi.json()
  expect(document.openapi).toMatch(/^3\./)
  expect(Object.keys(document.paths)).toContain("/v1/projects")
}, 60_000)

test("the operator commands run from the image's files, with only their own output", async () => {
  const { code, stderr, stdout } = await runCli(`sqlite:${join(folder, "data", "test.sqlite")}`, ["users", "list"], {
    viaScript: true,
    cwd: folder,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" }
  })
  expect({ code, stderr }).toEqual({ code: 0, stderr: "" })
  expect(JSON.parse(stdout)).toEqual({ data: [] })
}, 60_000)

test("the image holds no test, benchmark or repository files", () => {
  const entries = readdirSync(folder).sort()
  for (const left of ["test", "bench", ".git", "README.md", "Dockerfile"]) expect(entries).not.toContain(left)
  expect(entries).toEqual(expect.arrayContaining(["package.json", "bun.lock", "node_modules", "src", "dashboard"]))
})

/**
 * Lints the published OpenAPI document with two independent linters, Spectral (`spectral:oas`) and Redocly
 * (`recommended`), prints each one's counts and findings, and exits 1 when either finds an error or more than
 * `MAX_WARNINGS` warnings. The document is the one the server serves (src/Http/OpenApi.ts), for a public address.
 *
 * Run: `bun run lint:openapi` (`.ci/run` runs it after the import graph).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { openApiDocument } from "../src/Http/OpenApi.ts"

const MAX_WARNINGS = 5

/**
 * Findings that are true of the service and stay: printed, not counted. The discovery documents (RFC 8414's and
 * RFC 9728's metadata, the JWKS) are public and answer 200 to every GET, so they have no 4xx to declare.
 */
const accepted = (finding: Finding): boolean =>
  finding.rule === "operation-4xx-response" && /well-known|jwks\.json/.test(finding.where)
const root = join(import.meta.dir, "..")
const bin = (name: string) => join(root, "node_modules", ".bin", name)

const dir = mkdtempSync(join(tmpdir(), "pcs-openapi-lint-"))
const file = join(dir, "openapi.json")
const baseUrl = "https://api.pcs.invalid"
writeFileSync(file, JSON.stringify(openApiDocument({ baseUrl, authUrl: `${baseUrl}/oauth` }), null, 2))
writeFileSync(join(dir, ".spectral.yaml"), 'extends: ["spectral:oas"]\n')

interface Finding {
  readonly severity: "error" | "warning" | "other"
  readonly rule: string
  readonly where: string
  readonly message: string
}

const run = (args: ReadonlyArray<string>) => {
  const result = Bun.spawnSync([...args], { cwd: dir, stdout: "pipe", stderr: "pipe" })
  return { stdout: result.stdout.toString(), stderr: result.stderr.toString(), code: result.exitCode }
}

/** Spectral's JSON: an array of `{code, message, path, severity}` (0 error, 1 warning, 2 info, 3 hint). */
const spectral = (): ReadonlyArray<Finding> => {
  const { code, stderr, stdout } = run([bin("spectral"), "lint", "-r", ".spectral.yaml", "-f", "json", "-q", file])
  const start = stdout.indexOf("[")
  if (start < 0) throw new Error(`spectral gave no report (exit ${code}): ${stderr}${stdout}`)
  const report: Array<{ code: string; message: string; path: Array<string>; severity: number }> = JSON.parse(
    stdout.slice(start)
  )
  return report.map((item) => ({
    severity: item.severity === 0 ? "error" : item.severity === 1 ? "warning" : "other",
    rule: item.code,
    where: item.path.join("."),
    message: item.message
  }))
}

/** Redocly's JSON: `{totals, problems: [{ruleId, severity, message, location: [{pointer}]}]}`. */
const redocly = (): ReadonlyArray<Finding> => {
  const { code, stderr, stdout } = run([bin("redocly"), "lint", "--extends", "recommended", "--format", "json", file])
  const start = stdout.indexOf("{")
  if (start < 0) throw new Error(`redocly gave no report (exit ${code}): ${stderr}${stdout}`)
  const report: {
    problems: Array<{ ruleId: string; severity: string; message: string; location: Array<{ pointer: string }> }>
  } = JSON.parse(stdout.slice(start))
  return report.problems.map((item) => ({
    severity: item.severity === "error" ? "error" : item.severity === "warn" ? "warning" : "other",
    rule: item.ruleId,
    where: item.location[0]?.pointer ?? "",
    message: item.message
  }))
}

let failed = false
for (const [name, lint] of [
  ["Spectral (spectral:oas)", spectral],
  ["Redocly (recommended)", redocly]
] as const) {
  const all = lint()
  const findings = all.filter((finding) => !accepted(finding))
  const errors = findings.filter((finding) => finding.severity === "error").length
  const warnings = findings.filter((finding) => finding.severity === "warning").length
  console.log(`${name}: ${errors} errors, ${warnings} warnings (at most ${MAX_WARNINGS} allowed)`)
  for (const finding of all) {
    const note = accepted(finding) ? " (accepted: not counted)" : ""
    console.log(`  ${finding.severity} ${finding.rule} ${finding.where}: ${finding.message}${note}`)
  }
  if (errors > 0 || warnings > MAX_WARNINGS) failed = true
}
rmSync(dir, { recursive: true, force: true })
process.exit(failed ? 1 : 0)

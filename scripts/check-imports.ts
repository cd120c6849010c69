/**
 * Checks the import graph of src/ against the ranks of the README's Layout section. Exits 1, listing each offending
 * import, when:
 *
 * - a module imports a module of a higher rank (dependencies point down: Domain ← Sql ← storage ← services ←
 *   contract ← handlers ← server wiring);
 * - folders import each other in a circle. Root files (`src/Api.ts`, `src/Http.ts`, `src/main.ts`, …) are nodes
 *   of their own. One edge is not a folder edge: a handler's import of the root `HttpApi` (`Projects/Http.ts` →
 *   `Api.ts`, which holds `Projects/Api.ts`'s group), which `HttpApiBuilder.group(Api, …)` needs, as in Effect's
 *   own examples; nothing can hide behind it, since `Api.ts` may import only contract modules (rank 4);
 * - modules import each other in a circle, within a folder or across folders (`import type` counts: an interface
 *   that names its implementations is a circle even when they import only its types);
 * - a storage module (`<Area>/Repo.ts`, `Sql/`) imports the HTTP contract or server (`Api.ts`, `Contract/`,
 *   `Http/`);
 * - `Domain/` imports anything but `effect` and `@effect/platform` (and other Domain modules);
 * - a module imports one of the `@effect/*` packages through its index (`from "@effect/platform"`) rather than by
 *   module path (`from "@effect/platform/HttpApiBuilder"`): an index loads every module of its package (Scalar's and
 *   Swagger UI's bundles, the cluster and RPC packages, …), which an idle server would then hold in memory
 *   (`bench/idle-rss.sh` measures it).
 *
 * Run: `bun run check:imports`. `checkImports(root)` answers the problems of any tree; `rankOf` gives a module its rank
 * (test/unit/check-imports.test.ts).
 */
import { readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, normalize, relative } from "node:path"
import ts from "typescript"

const listModules = (root: string, dir: string = root): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return listModules(root, path)
    return name.endsWith(".ts") && !name.endsWith(".d.ts") ? [relative(root, path)] : []
  })

/** The rank of a module, by its path under src/. */
export const rankOf = (module: string): number => {
  const [top = "", ...rest] = module.split("/")
  const file = rest.at(-1) ?? top
  if (rest.length === 0) {
    if (module === "Config.ts") return 0
    if (module === "Api.ts") return 4
    return 6 // Http.ts, main.ts, cli.ts
  }
  if (top === "Domain" || top === "Observability") return 0
  if (top === "Sql" || top === "Secrets") return 1
  if (top === "Http") return 6
  if (top === "Contract") return 4
  if (file === "Repo.ts" || top === "RateLimit") return 2
  if (file === "Api.ts") return 4
  if (file === "Http.ts" || (top === "OAuth" && file.startsWith("Pages"))) return 5
  return 3 // services: <Area>/<Area>.ts, Events/, Auth/, OAuth/, Webhooks/Delivery/
}

export const rankNames = ["domain", "sql", "storage", "service", "contract", "handler", "server"]

/** A folder (`Projects/`) or a root file (`Api.ts`). */
const folderOf = (module: string): string => {
  const parts = module.split("/")
  return parts.length === 1 ? module : `${parts[0]}/`
}

const isStorage = (module: string) =>
  module.startsWith("Sql/") || module.startsWith("Secrets/") || module.endsWith("/Repo.ts")
const isWire = (module: string) =>
  module === "Api.ts" ||
  module.endsWith("/Api.ts") ||
  module.startsWith("Contract/") ||
  module.startsWith("Http/") ||
  module === "Http.ts"

const domainMayImport = (specifier: string) =>
  specifier === "effect" ||
  specifier.startsWith("effect/") ||
  specifier === "@effect/platform" ||
  specifier.startsWith("@effect/platform/")

interface Import {
  readonly from: string
  readonly specifier: string
  /** The imported module under src/, when it is one. */
  readonly to: string | undefined
}

/** `@effect/<package>` alone: its index. `effect` itself is not counted (every module imports it). */
const isEffectPackageIndex = (specifier: string) => /^@effect\/[a-z-]+$/.test(specifier)

/** The edges between the nodes `key` gives, each with the imports that make it; imports `keep` refuses are left out. */
const graphOf = (
  imports: ReadonlyArray<Import>,
  key: (module: string) => string,
  keep: (item: Import) => boolean
): Map<string, Map<string, Array<Import>>> => {
  const edges = new Map<string, Map<string, Array<Import>>>()
  for (const item of imports) {
    if (item.to === undefined || !keep(item)) continue
    const [a, b] = [key(item.from), key(item.to)]
    if (a === b) continue
    const out = edges.get(a) ?? new Map<string, Array<Import>>()
    out.set(b, [...(out.get(b) ?? []), item])
    edges.set(a, out)
  }
  return edges
}

/** The graph's circles: its strongly connected components of more than one node (Tarjan's algorithm). */
const circlesOf = (
  nodes: ReadonlyArray<string>,
  edges: ReadonlyMap<string, ReadonlyMap<string, ReadonlyArray<Import>>>
): Array<Array<string>> => {
  let counter = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const components: Array<Array<string>> = []
  /** A node's number, set before it is read (Tarjan's algorithm visits a node before reading it). */
  const numberOf = (numbers: ReadonlyMap<string, number>, node: string): number => {
    const number = numbers.get(node)
    if (number === undefined) throw new Error(`${node} was not visited`)
    return number
  }
  const connect = (node: string): void => {
    index.set(node, counter)
    low.set(node, counter)
    counter++
    stack.push(node)
    onStack.add(node)
    for (const next of edges.get(node)?.keys() ?? []) {
      if (!index.has(next)) {
        connect(next)
        low.set(node, Math.min(numberOf(low, node), numberOf(low, next)))
      } else if (onStack.has(next)) {
        low.set(node, Math.min(numberOf(low, node), numberOf(index, next)))
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: Array<string> = []
      let member: string | undefined
      do {
        member = stack.pop()
        if (member === undefined) break
        onStack.delete(member)
        component.push(member)
      } while (member !== node)
      if (component.length > 1) components.push(component.sort())
    }
  }
  for (const node of nodes) if (!index.has(node)) connect(node)
  return components
}

/** The imports inside each circle of the graph, with the circle `describe`d. */
const circleProblems = (
  nodes: ReadonlyArray<string>,
  edges: ReadonlyMap<string, ReadonlyMap<string, ReadonlyArray<Import>>>,
  describe: (component: ReadonlyArray<string>) => string
): Array<{ readonly item: Import; readonly circle: string }> =>
  circlesOf(nodes, edges).flatMap((component) => {
    const members = new Set(component)
    const circle = describe(component)
    return component.flatMap((from) =>
      Array.from(edges.get(from) ?? []).flatMap(([to, items]) =>
        members.has(to) ? items.map((item) => ({ item, circle })) : []
      )
    )
  })

/** What breaks the structure in the tree of modules under `root` (a `src/`), one line an offending import. */
export const checkImports = (
  root: string
): { readonly problems: ReadonlyArray<string>; readonly modules: number; readonly imports: number } => {
  const modules = listModules(root).sort()
  const known = new Set(modules)

  const importsOf = (module: string): Array<Import> => {
    const text = readFileSync(join(root, module), "utf8")
    const { importedFiles } = ts.preProcessFile(text, true, true)
    return importedFiles.map(({ fileName: specifier }) => {
      if (!specifier.startsWith(".")) return { from: module, specifier, to: undefined }
      const target = normalize(join(dirname(module), specifier)).replace(/\.js$/, ".ts")
      return { from: module, specifier, to: known.has(target) ? target : undefined }
    })
  }

  const imports = modules.flatMap(importsOf)
  const problems: Array<string> = []

  for (const { from, specifier, to } of imports) {
    if (isEffectPackageIndex(specifier)) {
      problems.push(`index    src/${from} imports "${specifier}" (import its modules by path: "${specifier}/<Module>")`)
    }
    if (from.startsWith("Domain/") && to === undefined && !specifier.startsWith(".") && !domainMayImport(specifier)) {
      problems.push(`domain   src/${from} imports "${specifier}" (Domain imports only effect and @effect/platform)`)
    }
    if (to === undefined) continue
    if (from.startsWith("Domain/") && !to.startsWith("Domain/")) {
      problems.push(`domain   src/${from} imports src/${to} (Domain imports only Domain, effect, @effect/platform)`)
    }
    if (isStorage(from) && isWire(to)) {
      problems.push(`storage  src/${from} imports src/${to} (storage never imports the HTTP contract)`)
    }
    const [a, b] = [rankOf(from), rankOf(to)]
    if (b > a) {
      problems.push(`rank     src/${from} (${a} ${rankNames[a]}) imports src/${to} (${b} ${rankNames[b]})`)
    }
  }

  // Folder circles, but for a handler's import of the root `HttpApi` (above).
  const folderCircles = circleProblems(
    Array.from(new Set(modules.map(folderOf))).sort(),
    graphOf(imports, folderOf, (item) => item.to !== "Api.ts"),
    (component) => `folders ${component.join(" ⇄ ")}`
  )
  // Module circles, every import counted; an import a folder circle already names is not named twice.
  const named = new Set(folderCircles.map(({ item }) => `${item.from} ${item.to}`))
  const moduleCircles = circleProblems(
    modules,
    graphOf(
      imports,
      (module) => module,
      () => true
    ),
    (component) => `modules ${component.map((module) => `src/${module}`).join(" ⇄ ")}`
  ).filter(({ item }) => !named.has(`${item.from} ${item.to}`))
  for (const { item, circle } of [...folderCircles, ...moduleCircles]) {
    problems.push(`cycle    src/${item.from} imports src/${item.to} (${circle})`)
  }
  return { problems, modules: modules.length, imports: imports.length }
}

if (import.meta.main) {
  const { problems, modules, imports } = checkImports(join(import.meta.dir, "..", "src"))
  if (problems.length > 0) {
    console.log(problems.join("\n"))
    console.log(`\n${problems.length} import${problems.length === 1 ? "" : "s"} break the structure`)
    process.exit(1)
  }
  console.log(`${modules} modules, ${imports} imports: the structure holds`)
}

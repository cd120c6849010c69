/**
 * Operator commands: `bun run cli <command> [--flag value | --flag=value …]`. Uses the server's `DATABASE_URL`.
 * A success prints one JSON document (`{"data": …}`) on stdout; a failure prints one line on stderr (and the
 * command's usage after a usage error). `--help` / `-h` anywhere prints usage on stdout. Exit codes: see `EXIT`.
 * Hand-written, not @effect/cli 0.77 (tried): its ANSI-coloured help, its unprefixed error lines and its reading of a
 * repeated flag as a different missing one would each need overriding to keep this output and exit-code contract.
 *
 * Adding a command is one entry in `commands`: its words, a summary, its flags and what it runs.
 */
import { Cause, Context, Effect, Exit, Layer, Logger, Option, Schema } from "effect"
import { ApiKeys } from "./ApiKeys/ApiKeys.js"
import { SigningKeys } from "./Auth/Jwt.js"
import { KeyName, KeyScopes } from "./Domain/ApiKey.js"
import { CurrentActor, OPERATOR } from "./Domain/Audit.js"
import { Conflict, Forbidden, NotFound, ValidationFailed } from "./Domain/Errors.js"
import { scopeNames } from "./Domain/Scopes.js"
import { parseInstant } from "./Domain/Time.js"
import { OAuthClients } from "./OAuth/Clients.js"
import { Retention } from "./Retention/Retention.js"
import { KeyRingLive } from "./Secrets/KeyRing.js"
import { rotate as rotateSecrets } from "./Secrets/Stored.js"
import { SqlClientLive, SqlLive } from "./Sql/Client.js"
import { runMigrations } from "./Sql/Migrations.js"
import { TeamRole } from "./Teams/Api.js"
import { Teams } from "./Teams/Teams.js"
import { Users } from "./Users/Users.js"
import { Webhooks } from "./Webhooks/Webhooks.js"

/** What the exit status means (also in the README and in `--help`). */
export const EXIT = {
  ok: 0,
  /** The command could not run: the database is unreachable, or an unexpected error. */
  failure: 1,
  /** Unknown command or flag, a missing flag or value. */
  usage: 2,
  /** The user, key, team or client named does not exist. */
  notFound: 3,
  /** A value was refused (bad email, unknown scope, a duplicate, …). */
  refused: 4
} as const

class UsageError extends Schema.TaggedError<UsageError>()("UsageError", { message: Schema.String }) {}

interface Flag {
  readonly name: string
  /** The value's placeholder in the usage (`E`); absent for a switch such as `--public`. */
  readonly value?: string
  readonly required?: boolean
  readonly repeatable?: boolean
  /**
   * The flag this one is an alternative to (`--user` for `--email`): at most one of them may be given, and the
   * first one's `required` means one of them must be.
   */
  readonly or?: string
  readonly description: string
}

type Flags = ReadonlyMap<string, ReadonlyArray<string>>

type Services = Users | Teams | ApiKeys | OAuthClients | Webhooks | CliInput

interface Command {
  readonly words: string
  readonly summary: string
  readonly flags: ReadonlyArray<Flag>
  /** `standalone`: provides what it needs itself (no migrations run first). */
  readonly run:
    | { readonly _tag: "services"; readonly effect: (flags: Flags) => Effect.Effect<unknown, unknown, Services> }
    | { readonly _tag: "standalone"; readonly effect: (flags: Flags) => Effect.Effect<unknown, unknown> }
}

const last = (flags: Flags, name: string) => Option.fromNullable(flags.get(name)?.at(-1))
/** Present after parsing: `required` flags are checked there. */
const value = (flags: Flags, name: string) => flags.get(name)?.at(-1) ?? ""

/** `--batch N`: 1 to 10,000 (200 unless given). */
const batchOf = (flags: Flags): Effect.Effect<number, UsageError> => {
  const text = Option.getOrElse(last(flags, "batch"), () => "200")
  const n = Number(text)
  return /^\d+$/.test(text) && n >= 1 && n <= 10_000
    ? Effect.succeed(n)
    : Effect.fail(new UsageError({ message: "--batch must be an integer from 1 to 10000" }))
}

/** The user record without the internal organisation id. */
const publicUser = <U extends { readonly org_id: string }>({ org_id: _, ...user }: U) => user

const EMAIL_OR_ID = (role: string): ReadonlyArray<Flag> => [
  { name: "email", value: "E", required: true, description: `${role}'s email address` },
  { name: "user", value: "USER_ID", or: "email", description: `${role}'s id (instead of --email)` }
]

/** The user named by `--email` or by `--user` (parsing checked that exactly one is given). */
const userIdOf = (flags: Flags, email = "email", id = "user") =>
  Option.match(last(flags, email), {
    onNone: () => Effect.flatMap(Users, (users) => Effect.map(users.get(value(flags, id)), (user) => user.id)),
    onSome: (address) => Effect.flatMap(Users, (users) => Effect.map(users.getByEmail(address), (user) => user.id))
  })

/** `--scopes read,write`: an unknown scope is named, with the ones there are. */
const scopesOf = (text: string) => {
  const names = text.split(",").map((name) => name.trim())
  const known: ReadonlyArray<string> = scopeNames
  const unknown = names.filter((name) => !known.includes(name))
  if (unknown.length > 0) {
    const shown = unknown.map((name) => (name === "" ? "an empty name" : JSON.stringify(name))).join(", ")
    return Effect.fail(
      ValidationFailed.field(
        "scopes",
        `${unknown.length === 1 ? "has an unknown scope" : "has unknown scopes"}: ${shown}; ` +
          `the scopes are ${scopeNames.join(", ")} (comma-separated)`
      )
    )
  }
  return Schema.decodeUnknown(KeyScopes)(names).pipe(
    Effect.mapError(() => ValidationFailed.field("scopes", "must be a comma-separated list of scopes"))
  )
}

/** `--status` of `webhooks list`. */
const WEBHOOK_STATUSES = ["active", "failed", "disabled"]

const PASSWORD_FLAGS: ReadonlyArray<Flag> = [
  { name: "password-stdin", description: "read the password from stdin (its first line)" },
  {
    name: "password",
    value: "P",
    or: "password-stdin",
    description: "the password itself (discouraged: it stays in the shell's history and the process list)"
  }
]

/**
 * What a command reads besides its flags: standard input, and a terminal to ask on. The process gives its own
 * (`ProcessInput`); a test can give text and no terminal, and run `cli` in its own process.
 */
export class CliInput extends Context.Tag("CliInput")<
  CliInput,
  {
    /** Standard input, whole. */
    readonly stdin: Effect.Effect<string>
    /** Asks without echoing what is typed; none when standard input is not a terminal. */
    readonly askHidden: Option.Option<(question: string) => Effect.Effect<string, UsageError>>
  }
>() {}

/** The first line of stdin, without its line ending. */
const readStdinLine = Effect.flatMap(CliInput, (input) =>
  Effect.map(input.stdin, (text) => text.split(/\r?\n/, 1)[0] ?? "")
)

/**
 * Asks on the terminal without echoing what is typed: raw mode is set before the question is written, so no
 * keystroke is ever echoed. Ctrl-C or Ctrl-D on an empty answer cancels.
 */
const promptHidden = (question: string) =>
  Effect.async<string, UsageError>((resume) => {
    const input = process.stdin
    let answer = ""
    const finish = () => {
      input.off("data", onData)
      input.setRawMode(false)
      input.pause()
      process.stderr.write("\n")
    }
    const onData = (chunk: Buffer) => {
      for (const char of chunk.toString("utf8")) {
        if (char === "\r" || char === "\n" || (char === "\u0004" && answer !== "")) {
          finish()
          return resume(Effect.succeed(answer))
        }
        if (char === "\u0003" || char === "\u0004") {
          finish()
          return resume(Effect.fail(new UsageError({ message: "cancelled: no password given" })))
        }
        answer = char === "\u007f" || char === "\b" ? answer.slice(0, -1) : answer + char
      }
    }
    input.setRawMode(true)
    input.on("data", onData)
    input.resume()
    process.stderr.write(question)
    return Effect.sync(finish)
  })

/**
 * The password: from stdin (`--password-stdin`), from `--password`, else asked on the terminal (twice, to catch a
 * typo). Without a terminal it is undefined when `optional`, and a usage error otherwise.
 */
const passwordOf = (flags: Flags, optional: boolean) =>
  Effect.gen(function* () {
    if (flags.has("password-stdin")) return yield* readStdinLine
    const given = last(flags, "password")
    if (Option.isSome(given)) return given.value
    const terminal = (yield* CliInput).askHidden
    if (Option.isNone(terminal)) {
      if (optional) return undefined
      return yield* new UsageError({ message: "no password: pipe it in with --password-stdin, or run in a terminal" })
    }
    const ask = terminal.value
    const first = yield* ask(optional ? "Password (empty: none, they cannot sign in): " : "Password: ")
    if (optional && first === "") return undefined
    const again = yield* ask("The same password again: ")
    if (again !== first) return yield* new UsageError({ message: "the two passwords differ" })
    return first
  })

const services = (effect: (flags: Flags) => Effect.Effect<unknown, unknown, Services>) =>
  ({ _tag: "services", effect }) as const

const commands: ReadonlyArray<Command> = [
  {
    words: "users create",
    summary: "Create a user (with an organisation of their own).",
    flags: [
      { name: "email", value: "E", required: true, description: "email address (stored lower-cased)" },
      { name: "name", value: "N", required: true, description: "display name, 1–100 characters" },
      ...PASSWORD_FLAGS
    ],
    run: services((flags) =>
      Effect.gen(function* () {
        // At least 8 characters; needed to sign in (dashboard, OAuth). Asked on a terminal when neither flag is given.
        const password = yield* passwordOf(flags, true)
        const user = yield* (yield* Users).create({
          email: value(flags, "email"),
          name: value(flags, "name"),
          password
        })
        return publicUser(user)
      })
    )
  },
  {
    words: "users list",
    summary: "List every user, oldest first.",
    flags: [],
    run: services(() => Effect.flatMap(Users, (users) => users.listAll()))
  },
  {
    words: "users delete",
    summary:
      "Delete a user with their API keys, webhooks and OAuth grants; refused (exit 4) while they own a " +
      "project, belong to a team or started a deployment still on record.",
    flags: EMAIL_OR_ID("the user"),
    run: services((flags) =>
      Effect.flatMap(userIdOf(flags), (id) => Effect.flatMap(Users, (users) => users.remove(id)))
    )
  },
  {
    words: "users suspend",
    summary:
      "Suspend a user: every API key, OAuth token and session of theirs answers 401 at once and they cannot sign " +
      "in; nothing is deleted (again: no change, the first suspended_at stays).",
    flags: EMAIL_OR_ID("the user"),
    run: services((flags) =>
      Effect.flatMap(userIdOf(flags), (id) => Effect.flatMap(Users, (users) => users.suspend(id)))
    )
  },
  {
    words: "users reactivate",
    summary:
      "Reactivate a suspended user: the keys, grants and sessions of theirs that have not expired work again " +
      "(again: no change).",
    flags: EMAIL_OR_ID("the user"),
    run: services((flags) =>
      Effect.flatMap(userIdOf(flags), (id) => Effect.flatMap(Users, (users) => users.reactivate(id)))
    )
  },
  {
    words: "users set-password",
    summary: "Set (or replace) a user's password, at least 8 characters: asked on the terminal, or --password-stdin.",
    flags: [...EMAIL_OR_ID("the user"), ...PASSWORD_FLAGS],
    run: services((flags) =>
      Effect.gen(function* () {
        const id = yield* userIdOf(flags)
        const password = (yield* passwordOf(flags, false)) ?? ""
        return publicUser(yield* (yield* Users).setPassword(id, password))
      })
    )
  },
  {
    words: "api-keys create",
    summary: "Issue an API key for a user; the key is shown this once.",
    flags: [
      ...EMAIL_OR_ID("the key's owner"),
      { name: "name", value: "N", required: true, description: "a label, 1–100 characters" },
      { name: "scopes", value: "S", required: true, description: "comma-separated: read,write,projects:read,…" },
      { name: "expires-at", value: "T", description: "ISO 8601 date or date-time with a zone" }
    ],
    run: services((flags) =>
      Effect.gen(function* () {
        const userId = yield* userIdOf(flags)
        const name = yield* Schema.decodeUnknown(KeyName)(value(flags, "name")).pipe(
          Effect.mapError(() => ValidationFailed.field("name", "must be 1 to 100 characters"))
        )
        const scopes = yield* scopesOf(value(flags, "scopes"))
        const expiresRaw = Option.getOrUndefined(last(flags, "expires-at"))
        const expires_at = expiresRaw === undefined ? null : parseInstant(expiresRaw)
        if (expires_at === undefined) {
          return yield* ValidationFailed.field("expires-at", "must be an ISO 8601 date or date-time with a zone")
        }
        return yield* (yield* ApiKeys).issue(userId, { name, scopes, expires_at })
      })
    )
  },
  {
    words: "api-keys list",
    summary: "List API keys (never the keys themselves), oldest first.",
    flags: [
      { name: "email", value: "E", description: "only the keys of the user with this email" },
      { name: "user", value: "USER_ID", or: "email", description: "only this user's keys (instead of --email)" }
    ],
    run: services((flags) =>
      Effect.gen(function* () {
        const userId = flags.has("email") || flags.has("user") ? yield* userIdOf(flags) : null
        return yield* (yield* ApiKeys).listAll(userId)
      })
    )
  },
  {
    words: "api-keys revoke",
    summary: "Revoke an API key (again: no change; it keeps its first revoked_at).",
    flags: [{ name: "key", value: "KEY_ID", required: true, description: "the key's id (key_…)" }],
    run: services((flags) => Effect.flatMap(ApiKeys, (keys) => keys.revokeAny(value(flags, "key"))))
  },
  {
    words: "teams create",
    summary: "Create a team with its first owner.",
    flags: [
      { name: "name", value: "N", required: true, description: "1–100 characters" },
      { name: "owner-email", value: "E", required: true, description: "the email of the team's first owner" },
      { name: "owner", value: "USER_ID", or: "owner-email", description: "the first owner's id (instead)" }
    ],
    run: services((flags) =>
      Effect.flatMap(userIdOf(flags, "owner-email", "owner"), (ownerId) =>
        Effect.flatMap(Teams, (teams) => teams.create({ name: value(flags, "name"), ownerId }))
      )
    )
  },
  {
    words: "teams list",
    summary: "List every team, oldest first, with its number of members and its first owner.",
    flags: [],
    run: services(() => Effect.flatMap(Teams, (teams) => teams.listAll()))
  },
  {
    words: "teams add-member",
    summary: "Add a user to a team.",
    flags: [
      { name: "team", value: "TEAM_ID", required: true, description: "the team" },
      ...EMAIL_OR_ID("the new member"),
      { name: "role", value: "owner|admin|member", description: "default member" }
    ],
    run: services((flags) =>
      Effect.gen(function* () {
        const role = yield* Schema.decodeUnknown(TeamRole)(Option.getOrElse(last(flags, "role"), () => "member")).pipe(
          Effect.mapError(() => ValidationFailed.field("role", "must be owner, admin or member"))
        )
        const userId = yield* userIdOf(flags)
        return yield* (yield* Teams).addMember({ teamId: value(flags, "team"), userId, role })
      })
    )
  },
  {
    words: "webhooks list",
    summary: "List every webhook, oldest first, with its owner's email, URL, status and events.",
    flags: [
      {
        name: "status",
        value: WEBHOOK_STATUSES.join("|"),
        description: "only the webhooks that are active, failed, or disabled by an operator"
      }
    ],
    run: services((flags) =>
      Effect.gen(function* () {
        const status = Option.getOrNull(last(flags, "status"))
        if (status !== null && !WEBHOOK_STATUSES.includes(status)) {
          return yield* ValidationFailed.field("status", `must be one of ${WEBHOOK_STATUSES.join(", ")}`)
        }
        return yield* (yield* Webhooks).listAll(status)
      })
    )
  },
  {
    words: "webhooks disable",
    summary:
      "Disable a webhook: it gets no new deliveries and its pending ones wait, unattempted, until it is enabled.",
    flags: [{ name: "id", value: "WEBHOOK_ID", required: true, description: "the webhook's id (whk_…)" }],
    run: services((flags) => Effect.flatMap(Webhooks, (hooks) => hooks.setDisabled(value(flags, "id"), true)))
  },
  {
    words: "webhooks enable",
    summary: "Enable a disabled webhook again: its waiting deliveries are attempted, and new events delivered.",
    flags: [{ name: "id", value: "WEBHOOK_ID", required: true, description: "the webhook's id (whk_…)" }],
    run: services((flags) => Effect.flatMap(Webhooks, (hooks) => hooks.setDisabled(value(flags, "id"), false)))
  },
  {
    words: "oauth-clients create",
    summary: "Register an OAuth client; a confidential client's secret is shown this once.",
    flags: [
      { name: "name", value: "N", required: true, description: "shown on the consent page" },
      {
        name: "redirect-uri",
        value: "U",
        required: true,
        repeatable: true,
        description: "exact callback URL; repeat for more"
      },
      { name: "public", description: "no secret (PKCE required): for browser and mobile apps" }
    ],
    run: services((flags) =>
      Effect.flatMap(OAuthClients, (clients) =>
        clients.create({
          name: value(flags, "name"),
          redirectUris: flags.get("redirect-uri") ?? [],
          isPublic: flags.has("public")
        })
      )
    )
  },
  {
    words: "oauth-clients list",
    summary: "List OAuth clients (never their secrets), oldest first.",
    flags: [],
    run: services(() => Effect.flatMap(OAuthClients, (clients) => clients.listAll()))
  },
  {
    words: "oauth-clients delete",
    summary: "Delete an OAuth client with its pending authorizations, codes and tokens.",
    flags: [{ name: "client", value: "CLIENT_ID", required: true, description: "the client's id (cli_…)" }],
    run: services((flags) => Effect.flatMap(OAuthClients, (clients) => clients.remove(value(flags, "client"))))
  },
  {
    words: "oauth-clients rotate-secret",
    summary: "Replace a confidential client's secret (shown this once); the old one stops working at once.",
    flags: [{ name: "client", value: "CLIENT_ID", required: true, description: "the client's id (cli_…)" }],
    run: services((flags) => Effect.flatMap(OAuthClients, (clients) => clients.rotateSecret(value(flags, "client"))))
  },
  {
    words: "jwt-keys rotate",
    summary: "Retire the JWT signing key and make a new one (the old one verifies for 1 h 30 s more).",
    flags: [],
    run: {
      _tag: "standalone",
      // Built here only: other commands neither need a signing key nor should make one.
      effect: () =>
        Effect.flatMap(SigningKeys, (keys) => keys.rotate).pipe(
          Effect.provide(SigningKeys.Default.pipe(Layer.provide(SqlLive)))
        )
    }
  },
  {
    words: "secrets rotate",
    summary:
      "Re-encrypt every stored secret (webhook secrets, JWT signing keys, recorded answers) under the first key of " +
      "SECRETS_KEY, in batches, while the service runs; then the other keys can be dropped.",
    flags: [
      { name: "batch", value: "N", description: "rows read and re-encrypted at a time (1–10000; 200 unless given)" }
    ],
    run: {
      _tag: "standalone",
      effect: (flags) => Effect.flatMap(batchOf(flags), (batch) => rotateSecrets(batch).pipe(Effect.provide(SqlLive)))
    }
  },
  {
    words: "prune",
    summary:
      "Run one retention sweep now (after any sweep running in a server) and print what it deleted: ended " +
      "deliveries, old events, expired idempotency keys and OAuth grants.",
    flags: [],
    run: {
      _tag: "standalone",
      effect: () =>
        Effect.flatMap(Retention, (retention) => retention.sweep({ wait: true })).pipe(
          Effect.flatMap(
            Option.match({
              onNone: () => Effect.dieMessage("the retention lock was not taken"),
              onSome: (report) => Effect.succeed(report.counts)
            })
          ),
          Effect.provide(Retention.Default.pipe(Layer.provideMerge(SqlLive)))
        )
    }
  },
  {
    words: "migrate",
    summary: "Apply the database migrations not yet applied (the server also does this on start-up).",
    flags: [],
    run: {
      _tag: "standalone",
      effect: () =>
        Effect.map(Effect.provide(runMigrations, Layer.merge(SqlClientLive, KeyRingLive)), (applied) =>
          applied.map(([id, name]) => ({ id, name }))
        )
    }
  }
]

const flagText = (flag: Flag) => (flag.value === undefined ? `--${flag.name}` : `--${flag.name} ${flag.value}`)

/** A flag's alternatives (`--user` for `--email`). */
const alternativesOf = (command: Command, flag: Flag) => command.flags.filter((other) => other.or === flag.name)

const usageLine = (command: Command) =>
  [
    command.words,
    ...command.flags
      .filter((flag) => flag.or === undefined)
      .map((flag) => {
        const alternatives = alternativesOf(command, flag)
        const text = [flag, ...alternatives].map(flagText).join(" | ")
        const more = flag.repeatable ? ` [${text} …]` : ""
        if (flag.required) return alternatives.length > 0 ? `(${text})${more}` : `${text}${more}`
        return `[${text}]${more}`
      })
  ].join(" ")

const EXIT_CODES =
  `exit status: ${EXIT.ok} done · ${EXIT.failure} could not run (database unreachable, unexpected error) · ` +
  `${EXIT.usage} usage error · ${EXIT.notFound} not found · ${EXIT.refused} a value was refused (invalid, duplicate)`

const USAGE = `usage: bun run cli <command> [--flag value | --flag=value …]

${commands.map((command) => `  ${usageLine(command)}`).join("\n")}

Every command prints one JSON document ({"data": …}) on stdout; errors go to stderr.
\`bun run cli <command> --help\` describes a command. Uses DATABASE_URL as the server does.
${EXIT_CODES}`

const commandHelp = (command: Command) => {
  const width = Math.max(0, ...command.flags.map((flag) => flagText(flag).length))
  const flags = command.flags.map((flag) => {
    const alternatives = alternativesOf(command, flag).map((other) => ` or --${other.name}`)
    const required = flag.required ? ` (required${alternatives.join("")})` : ""
    return `  ${flagText(flag).padEnd(width)}  ${flag.description}${required}`
  })
  return [
    `usage: bun run cli ${usageLine(command)}`,
    "",
    command.summary,
    ...(flags.length > 0 ? ["", ...flags] : []),
    "",
    EXIT_CODES
  ].join("\n")
}

const isHelp = (word: string) => word === "--help" || word === "-h"

/** The edit distance (Levenshtein) between two words. */
const distance = (a: string, b: string): number => {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(
        (previous[j] ?? 0) + 1,
        (row[j - 1] ?? 0) + 1,
        (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1)
      )
    }
    previous = row
  }
  return previous[b.length] ?? 0
}

/**
 * The message for a command line that names no command: the commands closest to what was typed (by edit distance,
 * over as many words as each command has), or, when none is close, where to find them.
 */
const unknownCommand = (argv: ReadonlyArray<string>): string => {
  const typed = argv.filter((word) => !word.startsWith("-"))
  const scored = commands.map((command) => {
    const words = command.words.split(" ")
    const given = typed.slice(0, words.length).join(" ")
    return { command, given, score: distance(given, command.words) }
  })
  const close = scored
    .filter(({ command, score }) => score <= Math.max(2, Math.floor(command.words.length / 3)))
    .sort((a, b) => a.score - b.score)
  const best = close[0]?.score
  const suggestions = close.filter(({ score }) => score === best).map(({ command }) => command.words)
  const head = `error: unknown command: ${argv.join(" ")}`
  const help = "`bun run cli --help` lists the commands."
  if (suggestions.length === 0) {
    const area = commands.filter((command) => command.words.split(" ")[0] === typed[0]).map((c) => c.words)
    return area.length === 0 ? `${head}\n${help}` : `${head}\nthe ${typed[0]} commands: ${area.join(", ")}\n${help}`
  }
  const quoted = suggestions.map((words) => `bun run cli ${words}`)
  return `${head}\ndid you mean ${quoted.join(" or ")}?\n${help}`
}

/** `--name value` or `--name=value`; a switch takes no value; only repeatable flags may repeat. */
const parseFlags = (command: Command, args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const flags = new Map<string, Array<string>>()
    for (let i = 0; i < args.length; i++) {
      const word = args[i] ?? ""
      if (!word.startsWith("--") || word === "--") {
        return yield* new UsageError({ message: `unexpected argument ${JSON.stringify(word)}` })
      }
      const equals = word.indexOf("=")
      const name = equals < 0 ? word.slice(2) : word.slice(2, equals)
      const flag = command.flags.find((candidate) => candidate.name === name)
      if (flag === undefined) return yield* new UsageError({ message: `unknown flag --${name} for ${command.words}` })
      let given: string
      if (flag.value === undefined) {
        if (equals >= 0) return yield* new UsageError({ message: `--${name} takes no value` })
        given = ""
      } else if (equals >= 0) {
        given = word.slice(equals + 1)
      } else {
        const next = args[i + 1]
        if (next === undefined || next.startsWith("--")) {
          return yield* new UsageError({ message: `--${name} needs a value (${flag.value})` })
        }
        given = next
        i++
      }
      const previous = flags.get(name)
      if (previous !== undefined && !flag.repeatable) {
        return yield* new UsageError({ message: `--${name} is given more than once` })
      }
      flags.set(name, [...(previous ?? []), given])
    }
    for (const flag of command.flags.filter((candidate) => candidate.or === undefined)) {
      const names = [flag, ...alternativesOf(command, flag)].map((candidate) => `--${candidate.name}`)
      const given = [flag, ...alternativesOf(command, flag)].filter((candidate) => flags.has(candidate.name))
      if (given.length > 1) return yield* new UsageError({ message: `give ${names.join(" or ")}, not both` })
      if (flag.required && given.length === 0) {
        return yield* new UsageError({
          message: names.length > 1 ? `${names.join(" or ")} is required` : `${names[0]} is required`
        })
      }
    }
    return flags
  })

/** The command named by the leading words, and the words after them. */
const findCommand = (argv: ReadonlyArray<string>) => {
  for (const command of commands) {
    const words = command.words.split(" ")
    if (words.every((word, i) => argv[i] === word)) return { command, rest: argv.slice(words.length) }
  }
  return undefined
}

const ServicesLive = Layer.mergeAll(
  Users.Default,
  Teams.Default,
  ApiKeys.Default,
  OAuthClients.Default,
  Webhooks.Default
).pipe(Layer.provideMerge(SqlLive))

/** Every change a command makes is the operator's (its events' and audit records' actor). */
const execute = (command: Command, rest: ReadonlyArray<string>): Effect.Effect<unknown, unknown, CliInput> =>
  Effect.flatMap(parseFlags(command, rest), (flags) =>
    command.run._tag === "services"
      ? Effect.provide(command.run.effect(flags), ServicesLive)
      : command.run.effect(flags)
  ).pipe(Effect.provideService(CurrentActor, OPERATOR))

const messageOf = (error: unknown): string =>
  error !== null && typeof error === "object" && "message" in error && typeof error.message === "string"
    ? error.message
    : String(error)

/** One line for an error and what caused it (`SqlError: … — connect ECONNREFUSED 127.0.0.1:1`), never a stack. */
const describe = (error: unknown): string => {
  const parts: Array<string> = []
  let current: unknown = error
  for (let depth = 0; depth < 5 && current !== undefined && current !== null; depth++) {
    const text = (messageOf(current).split("\n", 1)[0] ?? "").trim()
    if (text !== "" && !parts.includes(text)) parts.push(text)
    current = typeof current === "object" && "cause" in current ? current.cause : undefined
  }
  return parts.join(": ")
}

const isSqlError = (error: unknown) =>
  error !== null && typeof error === "object" && "_tag" in error && error._tag === "SqlError"

/** The exit status and the stderr line for a failed run. */
export const failureOf = (cause: Cause.Cause<unknown>): { readonly code: number; readonly message: string } => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    if (error instanceof UsageError) return { code: EXIT.usage, message: error.message }
    if (error instanceof NotFound) return { code: EXIT.notFound, message: error.message }
    if (error instanceof ValidationFailed || error instanceof Conflict || error instanceof Forbidden) {
      return { code: EXIT.refused, message: error.message }
    }
    if (isSqlError(error)) return { code: EXIT.failure, message: `the database failed: ${describe(error)}` }
    return { code: EXIT.failure, message: describe(error) }
  }
  const defect = Cause.dieOption(cause)
  if (Option.isSome(defect)) {
    return isSqlError(defect.value)
      ? {
          code: EXIT.failure,
          message: `the database could not be used (check DATABASE_URL): ${describe(defect.value)}`
        }
      : { code: EXIT.failure, message: describe(defect.value) }
  }
  return { code: EXIT.failure, message: Cause.isInterruptedOnly(cause) ? "interrupted" : "unexpected failure" }
}

/** What a run printed on each stream (each line ends with a newline), and its exit status. */
export interface CliOutcome {
  readonly stdout: string
  readonly stderr: string
  readonly code: number
}

const printed = (stream: "stdout" | "stderr", text: string, code: number): CliOutcome =>
  stream === "stdout" ? { stdout: `${text}\n`, stderr: "", code } : { stdout: "", stderr: `${text}\n`, code }

/**
 * One run of the command line `argv` (the words after `cli`): what it prints and its exit status. The database is
 * the one `DATABASE_URL` names, read through `Config`. Never fails: a failure is its stderr line and exit status.
 */
export const cli = (argv: ReadonlyArray<string>): Effect.Effect<CliOutcome, never, CliInput> =>
  Effect.suspend(() => {
    if (argv.length === 0) return Effect.succeed(printed("stderr", USAGE, EXIT.usage))
    const found = findCommand(argv)
    if (found === undefined) {
      if (argv[0] === "help" || isHelp(argv[0] ?? "")) return Effect.succeed(printed("stdout", USAGE, EXIT.ok))
      // `users --help`: the commands of that area.
      const area = commands.filter((command) => command.words.split(" ")[0] === argv[0])
      if (area.length > 0 && argv.slice(1).some(isHelp)) {
        const lines = area.map((command) => `  bun run cli ${usageLine(command)}`).join("\n")
        return Effect.succeed(printed("stdout", `usage:\n${lines}\n\n${EXIT_CODES}`, EXIT.ok))
      }
      return Effect.succeed(printed("stderr", unknownCommand(argv), EXIT.usage))
    }
    if (found.rest.some(isHelp)) return Effect.succeed(printed("stdout", commandHelp(found.command), EXIT.ok))
    return Effect.map(Effect.exit(execute(found.command, found.rest)), (exit) => {
      if (Exit.isSuccess(exit)) return printed("stdout", JSON.stringify({ data: exit.value }, null, 2), EXIT.ok)
      const { code, message } = failureOf(exit.cause)
      const usage = code === EXIT.usage ? `\n\n${commandHelp(found.command)}` : ""
      return printed("stderr", `error: ${message}${usage}`, code)
    })
  })

if (import.meta.main) {
  // This process's standard input, and its terminal when it is one.
  const input = CliInput.of({
    stdin: Effect.promise(() => Bun.stdin.text()),
    askHidden: process.stdin.isTTY ? Option.some(promptHidden) : Option.none()
  })
  // Log lines (a warning, say: the key made for the secrets at rest) go to stderr: stdout is the command's JSON.
  const outcome = await Effect.runPromise(
    Effect.provideService(cli(process.argv.slice(2)), CliInput, input).pipe(
      Effect.provide(Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger)))
    )
  )
  const write = (stream: NodeJS.WriteStream, text: string) =>
    new Promise<void>((resolve) => (text === "" ? resolve() : stream.write(text, () => resolve())))
  await write(process.stdout, outcome.stdout)
  await write(process.stderr, outcome.stderr)
  process.exit(outcome.code)
}

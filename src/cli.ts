/**
 * Operator commands: `bun run cli <command> [--flag value …]`. Prints one JSON document (`{"data": …}`) on stdout
 * and exits 0; on bad input prints a clear message on stderr and exits 1. Uses the server's `DATABASE_URL`.
 */
import { Cause, Effect, Exit, Layer, Option, Schema } from "effect"
import { ApiKeys } from "./ApiKeys/ApiKeys.js"
import { SigningKeys } from "./Auth/Jwt.js"
import { OAuthClients } from "./OAuth/Clients.js"
import { KeyName, KeyScopes } from "./Domain/ApiKey.js"
import { ValidationFailed } from "./Domain/Errors.js"
import { parseInstant } from "./Domain/Time.js"
import { SqlClientLive, SqlLive } from "./Sql/Client.js"
import { runMigrations } from "./Sql/Migrations.js"
import { TeamRole } from "./Teams/Api.js"
import { Teams } from "./Teams/Teams.js"
import { Users } from "./Users/Users.js"

const USAGE = `usage: bun run cli <command> [options]

  users create --email E --name N [--password P]
  users set-password --user USER_ID --password P
  api-keys create --user USER_ID --name N --scopes read,write [--expires-at T]
  teams create --name N --owner USER_ID
  teams add-member --team TEAM_ID --user USER_ID [--role owner|admin|member]
  oauth-clients create --name N --redirect-uri U [--redirect-uri U2 …] [--public]
  jwt-keys rotate
  migrate`

class UsageError extends Schema.TaggedError<UsageError>()("UsageError", { message: Schema.String }) {}

/** `--name value` pairs; a flag may repeat. */
const parseFlags = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const flags = new Map<string, Array<string>>()
    for (let i = 0; i < args.length; i += 2) {
      const flag = args[i]!
      const value = args[i + 1]
      if (!flag.startsWith("--") || value === undefined || value.startsWith("--")) {
        return yield* new UsageError({ message: `expected --flag value, got ${JSON.stringify(flag)}` })
      }
      flags.set(flag.slice(2), [...(flags.get(flag.slice(2)) ?? []), value])
    }
    return flags
  })

const command = (words: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const [area, verb, ...given] = words
    // `--public` is the one flag without a value.
    const isPublic = given.includes("--public")
    const rest = given.filter((word) => word !== "--public")
    const flags = yield* parseFlags(area === "migrate" ? [verb ?? "", ...rest].filter((w) => w !== "") : rest)
    if (isPublic && `${area} ${verb}` !== "oauth-clients create") {
      return yield* new UsageError({ message: "--public is only for oauth-clients create" })
    }
    const optional = (name: string) => Option.fromNullable(flags.get(name)?.at(-1))
    const required = (name: string) =>
      Option.match(optional(name), {
        onNone: () => Effect.fail(new UsageError({ message: `--${name} is required` })),
        onSome: Effect.succeed
      })
    const known = (...names: Array<string>) =>
      Effect.forEach(flags.keys(), (flag) =>
        names.includes(flag) ? Effect.void : Effect.fail(new UsageError({ message: `unknown flag --${flag}` })))

    switch (`${area} ${verb}`) {
      case "users create": {
        yield* known("email", "name", "password")
        const users = yield* Users
        const user = yield* users.create({
          email: yield* required("email"),
          name: yield* required("name"),
          password: Option.getOrUndefined(optional("password"))
        })
        const { org_id: _, ...record } = user
        return record
      }
      case "api-keys create": {
        yield* known("user", "name", "scopes", "expires-at")
        const userId = yield* required("user")
        yield* (yield* Users).get(userId)
        const name = yield* Schema.decodeUnknown(KeyName)(yield* required("name")).pipe(
          Effect.mapError(() => ValidationFailed.field("name", "must be 1 to 100 characters"))
        )
        const scopes = yield* Schema.decodeUnknown(KeyScopes)((yield* required("scopes")).split(",")).pipe(
          Effect.mapError(() => ValidationFailed.field("scopes", "must be a comma-separated list of scopes"))
        )
        const expiresRaw = Option.getOrUndefined(optional("expires-at"))
        const expires_at = expiresRaw === undefined ? null : parseInstant(expiresRaw)
        if (expires_at === undefined) {
          return yield* ValidationFailed.field("expires-at", "must be an ISO 8601 date or date-time with a zone")
        }
        return yield* (yield* ApiKeys).issue(userId, { name, scopes, expires_at })
      }
      case "teams create": {
        yield* known("name", "owner")
        return yield* (yield* Teams).create({ name: yield* required("name"), ownerId: yield* required("owner") })
      }
      case "teams add-member": {
        yield* known("team", "user", "role")
        const role = yield* Schema.decodeUnknown(TeamRole)(Option.getOrElse(optional("role"), () => "member")).pipe(
          Effect.mapError(() => ValidationFailed.field("role", "must be owner, admin or member"))
        )
        return yield* (yield* Teams).addMember({
          teamId: yield* required("team"),
          userId: yield* required("user"),
          role
        })
      }
      case "users set-password": {
        yield* known("user", "password")
        const { org_id: _, ...record } = yield* (yield* Users).setPassword(yield* required("user"), yield* required("password"))
        return record
      }
      case "oauth-clients create": {
        yield* known("name", "redirect-uri")
        return yield* (yield* OAuthClients).create({
          name: yield* required("name"),
          redirectUris: flags.get("redirect-uri") ?? [],
          isPublic
        })
      }
      case "jwt-keys rotate": {
        yield* known()
        // Built here only: other commands neither need a signing key nor should make one.
        return yield* Effect.flatMap(SigningKeys, (keys) => keys.rotate).pipe(Effect.provide(SigningKeys.Default))
      }
      default:
        return yield* new UsageError({ message: `unknown command: ${words.join(" ") || "(none)"}` })
    }
  })

const ServicesLive = Layer.mergeAll(Users.Default, Teams.Default, ApiKeys.Default, OAuthClients.Default).pipe(
  Layer.provideMerge(SqlLive)
)

const main = (argv: ReadonlyArray<string>): Effect.Effect<unknown, unknown> => {
  if (argv[0] === "migrate") {
    return Effect.map(
      Effect.provide(runMigrations, SqlClientLive),
      (applied) => applied.map(([id, name]) => ({ id, name }))
    )
  }
  return Effect.provide(command(argv), ServicesLive)
}

const describe = (error: unknown): string =>
  error !== null && typeof error === "object" && "message" in error ? String(error.message) : String(error)

if (import.meta.main) {
  const argv = process.argv.slice(2)
  if (argv.length === 0 || argv[0] === "--help" || argv[0] === "help") {
    process.stderr.write(`${USAGE}\n`)
    process.exit(argv.length === 0 ? 1 : 0)
  }
  const exit = await Effect.runPromiseExit(main(argv))
  if (Exit.isSuccess(exit)) {
    process.stdout.write(`${JSON.stringify({ data: exit.value }, null, 2)}\n`)
    process.exit(0)
  }
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    process.stderr.write(`error: ${describe(error)}\n`)
    if (error instanceof UsageError) process.stderr.write(`\n${USAGE}\n`)
  } else {
    process.stderr.write(`error: ${Cause.pretty(exit.cause)}\n`)
  }
  process.exit(1)
}

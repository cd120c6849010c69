/**
 * PostgreSQL databases for the tests: each server or harness gets one of its own, made here, and the ones this
 * process made are dropped once its tests have run (`dropDatabases`, through test/support/leftovers.ts),
 * so a run of the suite on a development server leaves nothing behind. CI's server is thrown away after the run:
 * `.ci/run` sets `TEST_POSTGRES_THROWAWAY=1`, and the databases are left to it (a drop waits for a checkpoint, and
 * the suite makes a few hundred).
 */
import { Database } from "bun:sqlite"
import { SQL } from "bun"

const made: Array<{ readonly base: string; readonly name: string }> = []

/**
 * How a copy of a template is made: `FILE_COPY` (PostgreSQL 15 and later) copies the template's files, where the
 * default (`WAL_LOG`) reads and logs each of its pages, which takes longer for a template as small as the migrated
 * one. Asked once per test process; servers before 15 have only the file copy, and no clause.
 */
let copyClause: Promise<string> | undefined
const strategyOf = async (admin: SQL): Promise<string> => {
  const [row] = await admin.unsafe("SHOW server_version_num")
  return Number(row?.server_version_num ?? 0) >= 150_000 ? " STRATEGY FILE_COPY" : ""
}

/**
 * Bun's `SQL` on the PostgreSQL database of `url` with one connection, for the tests' own statements. With its
 * default pool a first statement opens ten, and each is a backend the server starts.
 */
export const sqlOn = (url: string): SQL => new SQL({ url, max: 1 })

/**
 * Runs `statement` on a test server's database behind the server's back (to age a row, or to break a table): its
 * SQLite file, or its PostgreSQL database.
 */
export const runStatement = async (databaseUrl: string, statement: string): Promise<void> => {
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) {
    const sql = sqlOn(databaseUrl)
    try {
      await sql.unsafe(statement)
    } finally {
      await sql.close()
    }
    return
  }
  const db = new Database(databaseUrl.replace(/^sqlite:/, ""))
  try {
    db.exec("PRAGMA busy_timeout = 5000")
    db.exec(statement)
  } finally {
    db.close()
  }
}

/** The database `name` on the PostgreSQL server of `base`. */
export const databaseOn = (base: string, name: string): string => {
  const url = new URL(base)
  url.pathname = `/${name}`
  return url.toString()
}

/** A new database on the server of `base`: empty, or a copy of `template` (`CREATE DATABASE … TEMPLATE`). */
export const createDatabase = async (base: string, template: string): Promise<string> => {
  const name = `pcs_test_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`
  const admin = sqlOn(base)
  try {
    if (template !== "") copyClause ??= strategyOf(admin)
    const copy = template === "" ? "" : ` TEMPLATE ${template}${await copyClause}`
    await admin.unsafe(`CREATE DATABASE ${name}${copy}`)
  } finally {
    await admin.close()
  }
  made.push({ base, name })
  return databaseOn(base, name)
}

/**
 * Drops every database `createDatabase` made in this process, with whatever is still connected to it; on a server
 * thrown away after the run (`TEST_POSTGRES_THROWAWAY=1`, as `.ci/run` sets), only forgets them.
 */
export const dropDatabases = async (): Promise<void> => {
  if (process.env.TEST_POSTGRES_THROWAWAY === "1") {
    made.splice(0)
    return
  }
  for (const { base, name } of made.splice(0)) {
    const admin = sqlOn(base)
    try {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    } finally {
      await admin.close()
    }
  }
}

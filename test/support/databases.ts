/**
 * PostgreSQL databases for the tests: each server or harness gets one of its own, made here, and the ones this
 * process made are dropped once its tests have run (`dropDatabases`, through test/support/leftovers.ts),
 * so a run of the suite on a development server leaves nothing behind (CI's server is thrown away anyway).
 */
import { SQL } from "bun"

const made: Array<{ readonly base: string; readonly name: string }> = []

/** The database `name` on the PostgreSQL server of `base`. */
export const databaseOn = (base: string, name: string): string => {
  const url = new URL(base)
  url.pathname = `/${name}`
  return url.toString()
}

/** A new database on the server of `base`: empty, or a copy of `template` (`CREATE DATABASE … TEMPLATE`). */
export const createDatabase = async (base: string, template: string): Promise<string> => {
  const name = `pcs_test_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`
  const admin = new SQL(base)
  try {
    await admin.unsafe(`CREATE DATABASE ${name}${template === "" ? "" : ` TEMPLATE ${template}`}`)
  } finally {
    await admin.close()
  }
  made.push({ base, name })
  return databaseOn(base, name)
}

/** Drops every database `createDatabase` made in this process, with whatever is still connected to it. */
export const dropDatabases = async (): Promise<void> => {
  for (const { base, name } of made.splice(0)) {
    const admin = new SQL(base)
    try {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    } finally {
      await admin.close()
    }
  }
}

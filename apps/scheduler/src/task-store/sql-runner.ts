import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, QueryFailedError } from 'typeorm';
import { toColumn } from './task-row.mapping';

/** The database cannot be reached (as opposed to one statement failing). */
export function isConnectionError(err: unknown): boolean {
  const e = err as { code?: string; driverError?: { code?: string }; fatal?: boolean };
  const code = e?.driverError?.code ?? e?.code ?? '';
  return (
    e?.fatal === true ||
    [
      'ECONNREFUSED',
      'ECONNRESET',
      'ETIMEDOUT',
      'EPIPE',
      'PROTOCOL_CONNECTION_LOST',
      'ER_CON_COUNT_ERROR',
      'POOL_CLOSED',
    ].includes(code)
  );
}

export function isUniqueViolation(err: unknown): boolean {
  if (!(err instanceof QueryFailedError)) return false;
  const driverError = (
    err as QueryFailedError & { driverError?: { code?: string; errno?: number } }
  ).driverError;
  return (
    driverError?.code === 'ER_DUP_ENTRY' ||
    driverError?.code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    driverError?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
  );
}

/**
 * Plain SQL on the hot paths of the task tables: the ORM's query builder cost more CPU than the
 * database did. Runs on a transaction's connection when given one, else on its own.
 */
@Injectable()
export class SqlRunner {
  constructor(private readonly db: DataSource) {}

  /**
   * `SELECT columns FROM table WHERE key IN (...)`, a thousand keys a statement, as plain rows:
   * for reads of many rows at once, where the query builder's row mapping cost more than the
   * query did.
   */
  async selectIn(
    m: EntityManager | undefined,
    table: string,
    columns: string,
    key: string,
    values: readonly string[],
  ): Promise<Record<string, unknown>[]> {
    const out: Record<string, unknown>[] = [];
    for (let i = 0; i < values.length; i += 1000) {
      const part = values.slice(i, i + 1000);
      const { records } = await this.exec(
        m,
        `SELECT ${columns} FROM ${table} WHERE ${key} IN (${part.map(() => '?').join(', ')})`,
        part,
      );
      out.push(...(records as Record<string, unknown>[]));
    }
    return out;
  }

  /** INSERTs rows (all with the same columns) in chunks that stay under every driver's parameter limit. */
  async insertRows(
    m: EntityManager,
    table: string,
    rows: readonly Record<string, unknown>[],
  ): Promise<void> {
    if (rows.length === 0) return;
    const columns = Object.keys(rows[0]);
    const chunk = Math.max(1, Math.floor(8000 / columns.length));
    for (let i = 0; i < rows.length; i += chunk) {
      const part = rows.slice(i, i + chunk);
      const tuple = `(${columns.map(() => '?').join(', ')})`;
      await this.exec(
        m,
        `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${part.map(() => tuple).join(', ')}`,
        part.flatMap((r) => columns.map((c) => toColumn(c, r[c]))),
      );
    }
  }

  /** Runs SQL on the transaction's connection, or on its own (released after). */
  async exec(
    m: EntityManager | undefined,
    sql: string,
    params: unknown[],
  ): Promise<{ records: unknown[]; affected: number | undefined }> {
    const own = m?.queryRunner ? undefined : this.db.createQueryRunner();
    const runner = m?.queryRunner ?? (own as NonNullable<typeof own>);
    try {
      const result = await runner.query(sql, params, true);
      return { records: result.records ?? [], affected: result.affected };
    } finally {
      await own?.release();
    }
  }
}

/** Where the scheduler keeps its state: an SQLite file (embedded default) or MySQL/MariaDB. */
export type DatabaseConfig =
  | { type: 'sqlite'; path: string }
  | {
      type: 'mysql';
      host: string;
      port: number;
      user: string;
      password: string;
      database: string;
      poolSize: number;
    };

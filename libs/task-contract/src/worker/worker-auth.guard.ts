import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { ContractErrorCode, ContractException } from '../errors/contract.exception';
import { RequestVerifier } from './auth/request-auth';

interface RawRequest {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  rawBody?: Buffer;
  body?: unknown;
}

/**
 * Refuses a call whose body is not JSON (415) or whose credentials do not verify (401), before
 * its body is even validated.
 */
@Injectable()
export class WorkerAuthGuard implements CanActivate {
  constructor(@Inject(RequestVerifier) private readonly verifier: RequestVerifier) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<RawRequest>();
    const contentType = String(req.headers['content-type'] ?? '');
    if (
      req.body !== undefined &&
      contentType !== '' &&
      !/^application\/json\b/i.test(contentType)
    ) {
      throw new ContractException(
        ContractErrorCode.UNSUPPORTED_MEDIA_TYPE,
        `bodies must be application/json, got ${contentType}`,
      );
    }
    if (req.body !== undefined && req.rawBody === undefined) {
      // An HMAC covers the exact bytes sent; a re-serialised body would not match.
      throw new ContractException(
        ContractErrorCode.INTERNAL,
        'the app must be created with { rawBody: true } to serve the task contract',
      );
    }
    this.verifier.verify({
      method: req.method,
      pathWithQuery: req.url,
      headers: req.headers,
      rawBody: req.rawBody ?? '',
    });
    return true;
  }
}

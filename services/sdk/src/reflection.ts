/**
 * gRPC server reflection (`grpc.reflection.v1` and `v1alpha`) built from protobuf-es descriptors, so
 * `buf curl`, grpcurl and Postman can call a reward service without local protos.
 * @module
 */
import { create, toBinary } from "@bufbuild/protobuf";
import type { DescFile, DescMessage, DescService } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { type ServiceImpl, reflectionV1, reflectionV1alpha } from "@reward-mesh/proto";

interface Index {
  readonly services: string[];
  readonly byName: Map<string, DescFile>;
  readonly bySymbol: Map<string, DescFile>;
}

function indexFiles(services: readonly DescService[]): Index {
  const byName = new Map<string, DescFile>();
  const bySymbol = new Map<string, DescFile>();
  const addMessage = (m: DescMessage, f: DescFile) => {
    bySymbol.set(m.typeName, f);
    for (const n of m.nestedMessages) addMessage(n, f);
    for (const e of m.nestedEnums) bySymbol.set(e.typeName, f);
  };
  const addFile = (f: DescFile) => {
    if (byName.has(f.name + ".proto")) return;
    byName.set(f.name + ".proto", f);
    for (const m of f.messages) addMessage(m, f);
    for (const e of f.enums) bySymbol.set(e.typeName, f);
    for (const s of f.services) {
      bySymbol.set(s.typeName, f);
      for (const m of s.methods) bySymbol.set(`${s.typeName}.${m.name}`, f);
    }
    for (const d of f.dependencies) addFile(d);
  };
  for (const s of services) addFile(s.file);
  return { services: services.map((s) => s.typeName), byName, bySymbol };
}

/** The file and its transitive dependencies, dependencies first, each once. */
function withDependencies(file: DescFile): Uint8Array[] {
  const out: Uint8Array[] = [];
  const seen = new Set<string>();
  const visit = (f: DescFile) => {
    if (seen.has(f.name)) return;
    seen.add(f.name);
    for (const d of f.dependencies) visit(d);
    out.push(toBinary(FileDescriptorProtoSchema, f.proto));
  };
  visit(file);
  // The requested file first, as grpc-go and grpc-java do.
  const own = out.pop()!;
  return [own, ...out];
}

const NOT_FOUND = 5;
const UNIMPLEMENTED = 12;

type V1 = typeof reflectionV1;
type Req = reflectionV1.ServerReflectionRequest;

function answer(index: Index, req: Req, mod: V1): reflectionV1.ServerReflectionResponse {
  const base = { validHost: req.host, originalRequest: req };
  const files = (f: DescFile | undefined, what: string) =>
    f
      ? create(mod.ServerReflectionResponseSchema, {
          ...base,
          messageResponse: {
            case: "fileDescriptorResponse",
            value: { fileDescriptorProto: withDependencies(f) },
          },
        })
      : create(mod.ServerReflectionResponseSchema, {
          ...base,
          messageResponse: {
            case: "errorResponse",
            value: { errorCode: NOT_FOUND, errorMessage: `${what} not found` },
          },
        });
  switch (req.messageRequest.case) {
    case "listServices":
      return create(mod.ServerReflectionResponseSchema, {
        ...base,
        messageResponse: {
          case: "listServicesResponse",
          value: { service: index.services.map((name) => ({ name })) },
        },
      });
    case "fileByFilename":
      return files(index.byName.get(req.messageRequest.value), `file '${req.messageRequest.value}'`);
    case "fileContainingSymbol": {
      const sym = req.messageRequest.value.replace(/^\./, "");
      return files(index.bySymbol.get(sym), `symbol '${sym}'`);
    }
    case "fileContainingExtension":
    case "allExtensionNumbersOfType":
      return create(mod.ServerReflectionResponseSchema, {
        ...base,
        messageResponse: {
          case: "errorResponse",
          value: { errorCode: NOT_FOUND, errorMessage: "the mesh's protos declare no extensions" },
        },
      });
    default:
      return create(mod.ServerReflectionResponseSchema, {
        ...base,
        messageResponse: {
          case: "errorResponse",
          value: { errorCode: UNIMPLEMENTED, errorMessage: "empty reflection request" },
        },
      });
  }
}

/** Reflection handlers (v1 and v1alpha) describing `services` and the reflection services themselves. */
export function createReflectionImpls(services: readonly DescService[]): {
  v1: ServiceImpl<typeof reflectionV1.ServerReflection>;
  v1alpha: ServiceImpl<typeof reflectionV1alpha.ServerReflection>;
} {
  const index = indexFiles([...services, reflectionV1.ServerReflection, reflectionV1alpha.ServerReflection]);
  return {
    v1: {
      async *serverReflectionInfo(reqs) {
        for await (const req of reqs) yield answer(index, req, reflectionV1);
      },
    },
    v1alpha: {
      async *serverReflectionInfo(reqs) {
        // v1alpha messages have the same fields and numbers as v1.
        for await (const req of reqs) {
          yield answer(
            index,
            req as unknown as Req,
            reflectionV1 as V1,
          ) as unknown as reflectionV1alpha.ServerReflectionResponse;
        }
      },
    },
  };
}

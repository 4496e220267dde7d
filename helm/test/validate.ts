/**
 * Validates rendered objects against the Kubernetes OpenAPI schemas (`kubernetes-models@4`, the last
 * line for Node 20) and KEDA's CRD schema (`@kubernetes-models/keda@0.4`, generated from KEDA's CRDs).
 * @module
 */
import { ScaledObject } from "@kubernetes-models/keda/keda.sh/v1alpha1";
import { Deployment, StatefulSet } from "kubernetes-models/apps/v1";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2";
import { Job } from "kubernetes-models/batch/v1";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import { ConfigMap, PersistentVolumeClaim, Pod, Secret, Service, ServiceAccount } from "kubernetes-models/v1";
import type { K8sObject } from "./helm.js";

type Model = new (data: never) => { validate(): void };

const MODELS: Record<string, Model> = {
  "apps/v1/Deployment": Deployment as unknown as Model,
  "apps/v1/StatefulSet": StatefulSet as unknown as Model,
  "autoscaling/v2/HorizontalPodAutoscaler": HorizontalPodAutoscaler as unknown as Model,
  "batch/v1/Job": Job as unknown as Model,
  "networking.k8s.io/v1/NetworkPolicy": NetworkPolicy as unknown as Model,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget as unknown as Model,
  "v1/ConfigMap": ConfigMap as unknown as Model,
  "v1/PersistentVolumeClaim": PersistentVolumeClaim as unknown as Model,
  "v1/Pod": Pod as unknown as Model,
  "v1/Secret": Secret as unknown as Model,
  "v1/Service": Service as unknown as Model,
  "v1/ServiceAccount": ServiceAccount as unknown as Model,
  "keda.sh/v1alpha1/ScaledObject": ScaledObject as unknown as Model,
};

/** Validates `o` against its kind's schema; throws naming the object and the schema error. */
export function validateObject(o: K8sObject): void {
  const key = `${o.apiVersion}/${o.kind}`;
  const M = MODELS[key];
  if (M === undefined)
    throw new Error(`no schema for ${key} (${o.metadata?.name}): add it to helm/test/validate.ts`);
  try {
    new M(structuredClone(o) as never).validate();
  } catch (err) {
    throw new Error(`${o.kind}/${o.metadata.name} does not validate: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

/** Validates every object. */
export function validateAll(objs: readonly K8sObject[]): void {
  for (const o of objs) validateObject(o);
}

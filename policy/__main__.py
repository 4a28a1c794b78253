from pulumi_policy import EnforcementLevel, PolicyPack, StackValidationPolicy

def noop(args, report_violation):
    report_violation(f"saw {len(args.resources)} resources")

PolicyPack("dynamo-infra", [StackValidationPolicy(name="probe", description="probe", validate=noop, enforcement_level=EnforcementLevel.ADVISORY)])

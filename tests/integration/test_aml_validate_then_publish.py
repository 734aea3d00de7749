"""Validate the AML branch at a commit, then publish exactly that commit: refused when the branch moved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from analytics_provider.operators import AnalyticsPublishAmlProjectOperator, AnalyticsValidateAmlProjectOperator
from analytics_provider.operators.publish import AnalyticsBranchMovedError, AnalyticsPublishError
from analytics_provider.testing.task_instance import FakeTaskInstance

from .git_repo import aml_repository, commit, git

DIAGNOSTIC = {"category": "error", "code": 1001, "message": "Unknown field 'revenu'",
              "file_path": "models/orders.model.aml", "start": 10, "end": 16}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return aml_repository(tmp_path)


def sent(emulator: Any, operation: str) -> list[Any]:
    return [r for r in emulator.requests if r.operation == operation]


def validate(repo: Path, **kwargs: Any) -> dict[str, Any]:
    task = AnalyticsValidateAmlProjectOperator(task_id="validate", branch="master", repository=str(repo),
                                               poll_interval=0.05, **kwargs)
    return task.execute({"ti": FakeTaskInstance()})


def publish(repo: Path, validated: Any) -> dict[str, Any]:
    task = AnalyticsPublishAmlProjectOperator(task_id="publish", validated=validated, repository=str(repo),
                                              poll_interval=0.05)
    return task.execute({"ti": FakeTaskInstance()})


def test_validate_reads_the_branch_head_and_sends_it(analytics_emulator, analytics_connection, repo) -> None:
    head = git(repo, "rev-parse", "HEAD")
    result = validate(repo)
    assert [r.json for r in sent(analytics_emulator, "validate_aml_project")] == [
        {"branch_name": "master", "commit_oid": head}]
    assert result["branch"] == "master" and result["commit"] == head
    assert result["project"] == str(repo) and result["diagnostics"] == []


def test_validate_at_a_given_commit_needs_no_repository(analytics_emulator, analytics_connection) -> None:
    task = AnalyticsValidateAmlProjectOperator(task_id="validate", branch="dev", commit_oid="abc1234",
                                               poll_interval=0.05)
    assert task.execute({"ti": FakeTaskInstance()})["commit"] == "abc1234"
    assert sent(analytics_emulator, "validate_aml_project")[0].json == {"branch_name": "dev", "commit_oid": "abc1234"}


def test_a_failed_validation_fails_with_each_diagnostic(analytics_emulator, analytics_connection, repo) -> None:
    analytics_emulator.set_publish_diagnostics([DIAGNOSTIC])
    with pytest.raises(AnalyticsPublishError, match=r"AML validate job \d+ failed: syntax_error") as raised:
        validate(repo)
    assert "Unknown field 'revenu'" in str(raised.value)


def test_the_validated_commit_is_published(analytics_emulator, analytics_connection, repo) -> None:
    validated = validate(repo)
    analytics_emulator.world.state.projects[1]["commit_oid"] = validated["commit"]  # the service's production head
    result = publish(repo, validated)
    assert result["target_commit"] == validated["commit"]
    assert len(sent(analytics_emulator, "publish_aml_project")) == 1


def test_a_branch_moved_after_validation_is_not_published(analytics_emulator, analytics_connection, repo) -> None:
    validated = validate(repo)
    moved = commit(repo, "Model orders { dimension revenue {} }")
    with pytest.raises(AnalyticsBranchMovedError) as raised:
        publish(repo, validated)
    assert str(raised.value) == (
        f"publish: branch 'master' moved since it was validated: validated at {validated['commit']}, now at "
        f"{moved}; nothing was published (validate and review the new commit)")
    assert sent(analytics_emulator, "publish_aml_project") == []


def test_a_publish_of_another_commit_than_the_validated_one_fails(analytics_emulator, analytics_connection,
                                                                 repo) -> None:
    validated = validate(repo)  # the emulator's production head is another commit than the validated one
    with pytest.raises(AnalyticsPublishError, match=r"published commit \w+, not the validated"):
        publish(repo, validated)


def test_validate_refuses_bad_input_before_any_request(analytics_emulator, analytics_connection, repo) -> None:
    with pytest.raises(ValueError, match=r"^validate: commit_oid must be the commit to validate, or given a repo"):
        AnalyticsValidateAmlProjectOperator(task_id="validate", branch="master")
    with pytest.raises(ValueError, match=r"^validate: commit_oid must be a commit id \(7 to 64 lowercase hex"):
        AnalyticsValidateAmlProjectOperator(task_id="validate", branch="master", commit_oid="HEAD~1").execute(
            {"ti": FakeTaskInstance()})
    with pytest.raises(ValueError, match=r"^validate: branch must be a branch name"):
        AnalyticsValidateAmlProjectOperator(task_id="validate", branch="two words", commit_oid="abc1234").execute(
            {"ti": FakeTaskInstance()})
    with pytest.raises(ValueError, match=r"^publish: validated must be the result of AnalyticsValidateAml"):
        publish(repo, {"commit": "abc1234"})
    with pytest.raises(ValueError, match=r"^publish: repository must be the AML project's git repository"):
        AnalyticsPublishAmlProjectOperator(task_id="publish", validated={"branch": "master", "commit": "abc1234"})
    assert analytics_emulator.requests == []


def test_an_unreadable_branch_fails_without_a_request_or_the_token(analytics_emulator, analytics_connection,
                                                                   repo) -> None:
    with pytest.raises(Exception, match=r"branch 'gone' of .* could not be read: no such branch; nothing was sent"):
        AnalyticsValidateAmlProjectOperator(task_id="validate", branch="gone", repository=str(repo),
                                            poll_interval=0.05).execute({"ti": FakeTaskInstance()})
    url = "http://user:s3cret-token@127.0.0.1:9/project.git"
    with pytest.raises(Exception, match="could not be read") as raised:
        AnalyticsValidateAmlProjectOperator(task_id="validate", branch="master", repository=url,
                                            poll_interval=0.05).execute({"ti": FakeTaskInstance()})
    assert "s3cret-token" not in str(raised.value) and "127.0.0.1:9/project.git" in str(raised.value)
    assert analytics_emulator.requests == []

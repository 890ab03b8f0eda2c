"""What the experiments share: running their independent fits."""
import gmmfast.experiments


def test_run_jobs_is_public_and_keeps_the_order_of_the_jobs(capsys):
    from gmmfast.experiments import run_jobs
    assert "run_jobs" in gmmfast.experiments.__all__
    jobs = [-3, 1, -2]
    assert run_jobs(abs, jobs, 1, describe=lambda r: f"got {r}") == [3, 1, 2]
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" (")[0] for line in lines] == ["  [1/3] got 3", "  [2/3] got 1",
                                                       "  [3/3] got 2"]
    assert run_jobs(abs, jobs, 2) == [3, 1, 2]          # two worker processes, same order
    assert capsys.readouterr().out == ""                # no describe: nothing printed

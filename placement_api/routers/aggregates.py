"""Routes for aggregates."""

from fastapi import APIRouter

router = APIRouter(tags=["aggregates"])

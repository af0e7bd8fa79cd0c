"""Routes for resource_classes."""

from fastapi import APIRouter

router = APIRouter(tags=["resource_classes"])
